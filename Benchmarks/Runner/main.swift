// swift run -c release Benchmarks [--base-url URL] [--json PATH] [--rounds N] [--smoke] [--only appsession|http|lists|store|observers|diagnostics|transfers|live|persistence|endless [--check]]
//   profiling: --profile-read N, --profile-send N, --profile-list N [--pages], --profile-fanout N (instant transport), --profile-pushes SECONDS,
//              --profile-http N [--raw | --raw-task | --raw-task-delegate | --transport | --send | --new-resource]
//              (needs --base-url); --only http runs the HTTP workloads alone
//
// HTTP workloads (ResourceKit vs raw URLSession + JSONDecoder) run when a PocketBase URL is given
// (--base-url, or POCKETBASE_URL as Scripts/pocketbase sets it); the in-process workloads always run.
import Foundation
import ResourceKit

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let smoke = arguments.contains("--smoke")
let baseURL = option("--base-url") ?? ProcessInfo.processInfo.environment["POCKETBASE_URL"]
let jsonPath = option("--json")
let rounds = Int(option("--rounds") ?? "") ?? (smoke ? 1 : 5)
let warmup = smoke ? 0 : 1

#if DEBUG
    let build = "debug"
#else
    let build = "release"
#endif

if let count = option("--profile-diagnostics").flatMap(Int.init) {
    // For profilers: `count` reads on an instant transport with one consumer of session.diagnostics().
    try await InProcessWorkloads.profileDiagnostics(count)
    exit(0)
}

if option("--only") == "diagnostics" {
    // The diagnostic feed's workload alone: a read without and with a listener.
    let report = try await InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).diagnostics()
    report.printTable()
    exit(0)
}

if option("--only") == "transfers" {
    // Large transfers over loopback: download and upload throughput against URLSession's own tasks, and peak
    // memory.
    var report = try await TransferWorkloads(megabytes: smoke ? 8 : 256, rounds: min(rounds, 3)).run()
    report.merge(try await UploadWorkloads(megabytes: smoke ? 8 : 256, rounds: min(rounds, 3)).run())
    report.printTable()
    exit(0)
}

if option("--only") == "endless" {
    // Servers that never stop writing: peak memory, and how fast the call and the connection end. With --check,
    // a round over the memory budget fails the run (Scripts/test).
    do {
        let report = try await EndlessWorkloads(rounds: smoke ? 2 : rounds).run(check: arguments.contains("--check"))
        report.printTable()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("Benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if option("--only") == "appsession" {
    // The headline: one app session, played by a plain URLSession client and by ResourceKit, counted.
    do {
        try await AppSessionWorkload(rounds: smoke ? 1 : rounds).run().printTable()
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("Benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if let count = option("--profile-fanout").flatMap(Int.init) {
    // For profilers: `count` pushed updates (`store.apply`) of an item 1,000 live lists hold.
    try await LiveWorkloads.profileFanOut(count)
    exit(0)
}

if option("--only") == "live" {
    // Live data alone: a pushed update to many holders, 1,000 events a second, event to visible.
    let report = try await LiveWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).run()
    report.printTable()
    exit(0)
}

if let seconds = option("--profile-pushes").flatMap(Double.init) {
    // For profilers: PocketBase-shaped events at 1,000 a second for `seconds`, into a store whose 10 lists hold
    // the changed row, and then the harness alone for as long.
    let report = try await LiveWorkloads(scale: seconds / 2, rounds: 1, warmup: 0).sustained()
    report.printTable()
    exit(0)
}

if let count = option("--profile-hydrate").flatMap(Int.init) {
    // For profilers: `count` cold starts of 10,000 persisted items.
    try await PersistenceWorkloads.profileHydrate(count)
    exit(0)
}

if let count = option("--profile-persistent-read").flatMap(Int.init) {
    // For profilers: `count` reads of a resource in a persistent store, on an instant transport.
    try await PersistenceWorkloads.profileReads(count)
    exit(0)
}

if let count = option("--profile-store-read").flatMap(Int.init) {
    // For profilers: `count` reads of a store's resource on an instant transport; with `--bare`, of a resource
    // outside any store, on the same transport.
    try await InProcessWorkloads.profileStoreReads(count, bare: arguments.contains("--bare"))
    exit(0)
}

if option("--only") == "persistence" {
    // The persistent store alone: a cold start from disk, updates written, a read's cost.
    let report = try await PersistenceWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).run()
    report.printTable()
    exit(0)
}

if option("--only") == "observers" {
    // Delivery to many `states` streams alone: fan-out, one change to 10,000 streams, pagination with observers.
    let workloads = InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup)
    var report = try await workloads.fanOut()
    report.merge(try await workloads.delivery())
    report.merge(try await workloads.paginationWithObservers())
    report.printTable()
    exit(0)
}

if option("--only") == "http" {
    // The HTTP workloads alone: GET+decode, the layers of a request, lists.
    guard let baseURL else { throw BenchmarkError("--only http needs --base-url or POCKETBASE_URL") }
    let report = try await HTTPWorkloads(baseURL: baseURL, requests: smoke ? 64 : 2000, rounds: rounds, warmup: warmup)
        .run()
    report.printTable()
    exit(0)
}

if option("--only") == "store" {
    // The store's workloads alone, for profilers and quick comparisons.
    let report = try await InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).store()
    report.printTable()
    exit(0)
}

let profiledPaths: [(String, HTTPWorkloads.ProfiledPath)] = [
    ("--raw", .raw), ("--raw-task", .rawDataTask), ("--raw-task-delegate", .rawDataTaskWithDelegate),
    ("--transport", .transport), ("--send", .send), ("--send-in-task", .sendInTask),
    ("--new-resource", .newResource),
]
let profiledPath = profiledPaths.first { arguments.contains($0.0) }?.1 ?? .read

if let count = option("--profile-http").flatMap(Int.init), let baseURL {
    // For profilers: `count` sequential reads of one post over HTTP, through one Resource, a new Resource each
    // (--new-resource), NetworkSession.send (--send), URLSessionTransport alone (--transport), or raw
    // URLSession + JSONDecoder with data(for:) (--raw) or a dataTask (--raw-task), ResourceKit on the session its
    // transport makes from the same configuration, so that profiles compare the client's CPU.
    try await HTTPWorkloads(baseURL: baseURL, requests: count, rounds: 1, warmup: 0)
        .profileReads(profiledPath)
    exit(0)
}

if let count = option("--profile-list").flatMap(Int.init) {
    // For profilers: `count` lists of 20 pages of 50 on an instant transport, through ListResource.loadAll, or
    // session.pages(of:) with --pages.
    try await InProcessWorkloads.profileLists(count, pages: arguments.contains("--pages"))
    exit(0)
}

if option("--only") == "overhead" {
    // The library's cost per request on an instant transport, against a bare shared read of the same request.
    let report = try await InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).overhead()
    report.printTable()
    exit(0)
}

if option("--only") == "lists" {
    // A list page against the same page sent, on an instant transport.
    let report = try await InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).listPages()
    report.printTable()
    exit(0)
}

if let count = option("--profile-send").flatMap(Int.init) {
    // For profilers: only NetworkSession.send on an instant transport.
    try await InProcessWorkloads.profileSends(count)
    exit(0)
}

if let count = option("--profile-read").flatMap(Int.init) {
    // For profilers (valgrind --tool=callgrind): only Resource.read on an instant transport.
    try await InProcessWorkloads.profileReads(count)
    exit(0)
}

var report = Report()
do {
    print("App session…")
    report.merge(try await AppSessionWorkload(rounds: smoke ? 1 : rounds).run())
    if let baseURL {
        print("HTTP workloads against \(baseURL)…")
        let http = HTTPWorkloads(baseURL: baseURL, requests: smoke ? 64 : 2000, rounds: rounds, warmup: warmup)
        report.merge(try await http.run())
    } else {
        report.notes.append("HTTP workloads skipped: pass --base-url or set POCKETBASE_URL (Scripts/bench does)")
    }
    print("In-process workloads…")
    report.merge(try await InProcessWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).run())
    print("Persistence…")
    report.merge(try await PersistenceWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).run())
    print("Live data…")
    report.merge(try await LiveWorkloads(scale: smoke ? 0.02 : 1, rounds: rounds, warmup: warmup).run())
    print("Transfers…")
    report.merge(try await TransferWorkloads(megabytes: smoke ? 8 : 256, rounds: min(rounds, 3)).run())
    report.merge(try await UploadWorkloads(megabytes: smoke ? 8 : 256, rounds: min(rounds, 3)).run())
    print("Endless bodies…")
    report.merge(try await EndlessWorkloads(rounds: smoke ? 2 : 10).run(check: false))
} catch {
    FileHandle.standardError.write(Data("Benchmark failed: \(error)\n".utf8))
    exit(1)
}
if build == "debug" && !smoke {
    report.notes.append("debug build: numbers are not representative; use swift run -c release Benchmarks")
}
report.printTable()
if let jsonPath {
    let configuration = [
        "build": build, "rounds": String(rounds), "warmup": String(warmup), "smoke": String(smoke),
        "cores": String(ProcessInfo.processInfo.activeProcessorCount),
        "memoryGiB": String(ProcessInfo.processInfo.physicalMemory / (1 << 30)),
        "date": ISO8601DateFormatter().string(from: Date()), "baseURL": baseURL ?? "",
    ]
    do {
        try report.writeJSON(to: jsonPath, configuration: configuration)
        print("wrote \(jsonPath)")
    } catch {
        FileHandle.standardError.write(Data("could not write \(jsonPath): \(error)\n".utf8))
        exit(1)
    }
}
