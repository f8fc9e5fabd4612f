import Foundation
import ResourceKit

// The preconditions of a write to a record (RFC 9110 §13.2.2, RFC 6585): see "Conditional writes" in
// TestingYourApp.md.
extension InMemoryBackend {
    /// A record as a `GET` answers it, with its `ETag` and `Last-Modified`, and those two; `nil` when there is none.
    func current(_ name: String, _ id: String, in state: State)
        -> (response: HTTPResponse, tag: String, modified: Int64)?
    {
        guard let record = state.collections[name]?.records[id] else { return nil }
        var response = Self.json(200, JSONValue.object(Self.withSystemFields(record, name)))
        let tag = Self.entityTag(of: response.body)
        let modified = Self.firstModification + (state.collections[name]?.revisions[id] ?? 0)
        response.headers = response.headers.merging([
            "ETag": tag, "Last-Modified": HTTPDate.string(fromSecondsSince1970: modified),
        ])
        return (response, tag, modified)
    }

    /// Why a write to a record is refused before it is applied: `428` when the backend requires preconditions
    /// and the request has none; `412`, with the current record (or an error body when there is none), when its
    /// `If-Match` matches no current tag, or, without `If-Match`, its `If-Unmodified-Since` is a valid date
    /// earlier than the record's (RFC 9110 §13.2.2, steps 1 and 2). `nil` to go on.
    func refusal(of request: ParsedRequest, to name: String, id: String, in state: State) -> HTTPResponse? {
        let headers = request.recorded.headers
        let ifMatch = headers["If-Match"]
        let ifUnmodifiedSince = headers["If-Unmodified-Since"]
        if state.requiresPreconditions, ifMatch == nil, ifUnmodifiedSince == nil {
            return Self.error(428, "This request must be conditional: send If-Match or If-Unmodified-Since.")
        }
        let current = current(name, id, in: state)
        func conflict() -> HTTPResponse {
            guard var response = current?.response else {
                return Self.error(412, "The record the request is conditional on no longer exists.")
            }
            response.statusCode = 412
            return response
        }
        if let ifMatch {
            guard let current, Self.strongCondition(ifMatch, matches: current.tag) else { return conflict() }
        } else if let ifUnmodifiedSince, let since = HTTPDate.seconds(from: ifUnmodifiedSince), let current {
            // A date that is not one HTTP-date is ignored (§13.1.4), as is the header for a record that is gone.
            if current.modified > since { return conflict() }
        }
        return nil
    }

    /// Whether an `If-Match` value (`*`, or tags separated by commas) matches `tag` by strong comparison
    /// (RFC 9110 §8.8.3.2): a weak tag matches nothing.
    static func strongCondition(_ value: String, matches tag: String) -> Bool {
        value.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || trimmed == tag
        }
    }
}
