// swift-tools-version: 6.2
// The benchmarks and the allocation budgets: a package of their own, so that the packages depending on
// ResourceKit resolve none of it (one of its targets replaces `malloc`). `Scripts/bench` and `Scripts/test`
// run them.
import PackageDescription

let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "ResourceKitBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [.package(name: "ResourceKit", path: "..")],
    targets: [
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                .product(name: "ResourceKit", package: "ResourceKit"),
                .product(name: "ResourceKitEventStream", package: "ResourceKit"),
                .product(name: "ResourceKitTransfer", package: "ResourceKit"),
                .product(name: "ResourceKitPersistence", package: "ResourceKit"),
                .product(name: "ResourceKitPocketBase", package: "ResourceKit"),
                .product(name: "ResourceKitTesting", package: "ResourceKit"),
                "HeapUsage", "BenchmarkFixtures",
            ],
            path: "Runner"
        ),
        .target(name: "HeapUsage", path: "HeapUsage"),
        // The rows and remote types both executables use, and their lock.
        .target(
            name: "BenchmarkFixtures", dependencies: [.product(name: "ResourceKit", package: "ResourceKit")],
            path: "Fixtures"),
        // Heap allocations per operation against budgets in the source; run in release by Scripts/test.
        .executableTarget(
            name: "AllocationBudgets",
            dependencies: [
                .product(name: "ResourceKit", package: "ResourceKit"),
                "AllocationCounter", "BenchmarkFixtures",
            ],
            path: "AllocationBudgets"
        ),
        // Defines malloc and its siblings in the executable that links it, to count every allocation.
        .target(name: "AllocationCounter", path: "AllocationCounter"),
    ],
    swiftLanguageModes: [.v6]
)

// The C targets take no Swift settings.
let cTargets: Set = ["HeapUsage", "AllocationCounter"]
for target in package.targets where !cTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + upcomingFeatures
}
