// swift-tools-version: 6.1
import PackageDescription

let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "ResourceKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ResourceKit", targets: ["ResourceKit"]),
        .library(name: "ResourceKitTesting", targets: ["ResourceKitTesting"]),
    ],
    targets: [
        .target(name: "ResourceKit"),
        .target(name: "ResourceKitTesting", dependencies: ["ResourceKit"]),
        .executableTarget(name: "Example", dependencies: ["ResourceKit", "ResourceKitTesting"], path: "Example"),
        .testTarget(name: "ResourceKitTests", dependencies: ["ResourceKit", "ResourceKitTesting"]),
        .testTarget(
            name: "ResourceKitTestingTests", dependencies: ["ResourceKit", "ResourceKitTesting"],
            // Read from the source tree by PocketBaseParityTests; Scripts/capture-pocketbase writes them.
            exclude: ["Captures"]),
        .testTarget(name: "ReadmeTests", dependencies: ["ResourceKit", "ResourceKitTesting"]),
        .testTarget(name: "EvolutionTests", dependencies: ["ResourceKit", "ResourceKitTesting"]),
        // Its crash and relaunch tests run the test binary itself as the child process (ChildProcess.swift).
        .testTarget(name: "IntegrationTests", dependencies: ["ResourceKit", "ResourceKitTesting"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + upcomingFeatures
}
