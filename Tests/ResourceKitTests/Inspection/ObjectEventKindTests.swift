import Foundation
import ResourceKit
import Testing

/// ResourceKit's kinds and properties of `DiagnosticEvent`: declared here, carried by the HTTP layer's events in
/// slots it does not name, written and read back, compared and described as when the HTTP layer declared them.
@Suite struct ObjectEventKindTests {
    static let kinds: [DiagnosticEvent.Kind] = [.stateChanged, .cacheHit, .joined, .operationFinished, .storeNews]

    @Test func theKindsKeepTheirNamesAndDecodeAsThemselves() throws {
        #expect(Self.kinds.map(\.name) == ["stateChanged", "cacheHit", "joined", "operationFinished", "storeNews"])
        let data = try JSONEncoder().encode(Self.kinds)
        #expect(
            String(decoding: data, as: UTF8.self)
                == #"["stateChanged","cacheHit","joined","operationFinished","storeNews"]"#)
        #expect(try JSONDecoder().decode([DiagnosticEvent.Kind].self, from: data) == Self.kinds)
        #expect(DiagnosticEvent.Kind("stateChanged", level: .error) == .stateChanged)
        let http: Set<DiagnosticEvent.Kind> = [
            .requestStarted, .requestFinished, .retry, .credentialRefresh, .redirect, .requestFailed,
        ]
        #expect(Set(Self.kinds).count == 5)
        #expect(Set(Self.kinds).isDisjoint(with: http))
    }

    /// What a replaying tool sets reads back, is compared, and is described in the order the summary always had.
    @Test func aReplayedEventKeepsEveryPropertyAndDescribesIt() {
        var news = DiagnosticEvent(.storeNews)
        news.object = "Resource<RemotePost> posts/1"
        news.itemType = "Post"
        news.itemCount = 3
        news.receivers = 2
        #expect(news.object == "Resource<RemotePost> posts/1")
        #expect(news.itemType == "Post")
        #expect(news.itemCount == 3)
        #expect(news.receivers == 2)
        #expect(news.callers == nil && news.stateSummary == nil && news.previousStateSummary == nil)
        #expect(news.description == "storeNews · Resource<RemotePost> posts/1 · 3 Post · 2 receivers")

        var change = DiagnosticEvent(.stateChanged)
        change.object = "ListResource<RemoteFeed>"
        change.previousStateSummary = "loading"
        change.stateSummary = "available, 50 items"
        change.url = "https://api.example.com/v1/posts"
        #expect(
            change.description
                == "stateChanged · ListResource<RemoteFeed> · loading → available, 50 items · https://api.example.com/v1/posts"
        )

        var finished = DiagnosticEvent(.operationFinished)
        finished.callers = 4
        #expect(finished.description == "operationFinished · 4 callers")
        finished.callers = nil
        #expect(finished.callers == nil)
        #expect(finished == DiagnosticEvent(.operationFinished))
    }

    @Test func eventsAreEqualExactlyWhenTheirPropertiesAre() {
        var one = DiagnosticEvent(.joined)
        one.object = "Resource<RemotePost> posts/1"
        one.callers = 2
        var two = DiagnosticEvent(.joined)
        two.callers = 2
        #expect(one != two)
        two.object = "Resource<RemotePost> posts/1"
        #expect(one == two)
        two.receivers = 0
        #expect(one != two)
        two.receivers = nil
        two.itemType = "Post"
        #expect(one != two)
        var request = DiagnosticEvent(.joined)
        request.url = "Resource<RemotePost> posts/1"
        request.callers = 2
        #expect(request != one)
    }
}
