// swift-tools-version: 6.2
import PackageDescription

let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let allModules: [Target.Dependency] = [
    "ResourceKitHTTP", "ResourceKitTransfer", "ResourceKitEventStream", "ResourceKit", "ResourceKitInspection",
    "ResourceKitPersistence", "ResourceKitPocketBase",
    "ResourceKitTesting",
]

let package = Package(
    name: "ResourceKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ResourceKitHTTP", targets: ["ResourceKitHTTP"]),
        .library(name: "ResourceKitTransfer", targets: ["ResourceKitTransfer"]),
        .library(name: "ResourceKitEventStream", targets: ["ResourceKitEventStream"]),
        .library(name: "ResourceKit", targets: ["ResourceKit"]),
        .library(name: "ResourceKitInspection", targets: ["ResourceKitInspection"]),
        .library(name: "ResourceKitPersistence", targets: ["ResourceKitPersistence"]),
        .library(name: "ResourceKitPocketBase", targets: ["ResourceKitPocketBase"]),
        .library(name: "ResourceKitTesting", targets: ["ResourceKitTesting"]),
    ],
    targets: [
        // The layers, each depending only on those below it (CONTRIBUTING.md, "Layers"):
        // the HTTP layer knows nothing of resources; ResourceKit re-exports it, so `import ResourceKit` is the
        // quick start; persistence and the outbox plug into the store from beside it, as vendor code does;
        // the testing kit fakes what it depends on.
        .target(name: "ResourceKitHTTP"),
        .target(name: "ResourceKitTransfer", dependencies: ["ResourceKitHTTP"]),
        .target(name: "ResourceKitEventStream", dependencies: ["ResourceKitHTTP"]),
        .target(name: "ResourceKit", dependencies: ["ResourceKitHTTP"]),
        .target(name: "ResourceKitInspection", dependencies: ["ResourceKit"]),
        .target(name: "ResourceKitPersistence", dependencies: ["ResourceKit"]),
        .target(name: "ResourceKitPocketBase", dependencies: ["ResourceKit", "ResourceKitEventStream"]),
        .target(name: "ResourceKitTesting", dependencies: ["ResourceKitHTTP", "ResourceKit"]),
        .executableTarget(
            name: "Example",
            dependencies: [
                "ResourceKit", "ResourceKitTransfer", "ResourceKitEventStream",
                "ResourceKitPersistence", "ResourceKitPocketBase", "ResourceKitTesting",
            ],
            path: "Example"),
        // What the test targets share (seeded random schedules, a trait to run off the cooperative pool); no
        // product has it.
        .target(
            name: "TestSupport", dependencies: ["ResourceKitHTTP", "ResourceKitTesting"], path: "Tests/TestSupport"),
        // A module's own tests, which may reach its internals (`@testable`) and nothing above it.
        .testTarget(
            name: "ResourceKitHTTPTests", dependencies: ["ResourceKitHTTP", "ResourceKitTesting", "TestSupport"]),
        .testTarget(name: "ResourceKitMachineTests", dependencies: ["ResourceKit"]),
        .testTarget(
            name: "ResourceKitEventStreamTests",
            dependencies: ["ResourceKitEventStream", "ResourceKitTesting", "TestSupport"]),
        .testTarget(
            name: "ResourceKitTransferTests",
            dependencies: ["ResourceKitTransfer", "ResourceKitTesting", "TestSupport"]),
        // Posts and feeds, for the tests of the core and the modules beside it.
        .target(
            name: "StoreTestSupport", dependencies: ["ResourceKit", "ResourceKitTesting", "TestSupport"],
            path: "Tests/StoreTestSupport"),
        .testTarget(
            name: "ResourceKitPersistenceTests",
            dependencies: ["ResourceKitPersistence", "ResourceKitTesting", "TestSupport", "StoreTestSupport"]),
        .testTarget(
            name: "ResourceKitPocketBaseTests",
            dependencies: ["ResourceKitPocketBase", "ResourceKitTesting", "TestSupport", "StoreTestSupport"]),
        .testTarget(
            name: "ResourceKitTests",
            dependencies: ["ResourceKit", "ResourceKitTesting", "TestSupport", "StoreTestSupport"]),
        // The testing kit's fakes answer the requests of the transfer, event-stream and PocketBase modules too.
        .testTarget(
            name: "ResourceKitTestingTests",
            dependencies: [
                "ResourceKit", "ResourceKitTesting", "ResourceKitTransfer", "ResourceKitEventStream",
                "ResourceKitPocketBase",
            ],
            // Read from the source tree by PocketBaseParityTests; Scripts/capture-pocketbase writes them.
            exclude: ["Captures"]),
        .testTarget(name: "ReadmeTests", dependencies: allModules),
        .testTarget(name: "EvolutionTests", dependencies: allModules),
        // Its crash and relaunch tests run the test binary itself as the child process (ChildProcess.swift).
        .testTarget(name: "IntegrationTests", dependencies: allModules),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + upcomingFeatures
}
