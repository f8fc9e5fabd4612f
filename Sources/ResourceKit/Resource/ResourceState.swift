/// The state of a remote value: not asked for yet, being loaded, loaded, or failed.
///
/// Loading and failure keep the last good value, so a refresh never blanks a screen.
public enum ResourceState<Value: Sendable>: Sendable {
    /// Nothing has been loaded, or the value was deleted.
    case idle
    /// A request is in flight; `previous` is the last value known before it.
    case loading(previous: Value?)
    /// The value is loaded.
    case available(Value)
    /// The last request failed; `previous` is the last value known before it.
    case failure(NetworkError, previous: Value?)

    /// The latest known value: the loaded one, or the previous one while loading or after a failure.
    public var value: Value? {
        switch self {
        case .idle: nil
        case .loading(let previous): previous
        case .available(let value): value
        case .failure(_, let previous): previous
        }
    }

    /// The error of a failed state.
    public var error: NetworkError? {
        if case .failure(let error, _) = self { return error }
        return nil
    }

    /// Whether a request is in flight.
    public var isLoading: Bool {
        if case .loading = self { return true }
        return false
    }

    /// Whether the state is `.available`.
    public var isAvailable: Bool {
        if case .available = self { return true }
        return false
    }

    /// Returns the state with its value, or values, transformed.
    /// - Parameter transform: Maps a value.
    /// - Returns: The state of the same case with the mapped value.
    public func map<Other: Sendable>(_ transform: (Value) -> Other) -> ResourceState<Other> {
        switch self {
        case .idle: .idle
        case .loading(let previous): .loading(previous: previous.map(transform))
        case .available(let value): .available(transform(value))
        case .failure(let error, let previous): .failure(error, previous: previous.map(transform))
        }
    }
}

extension ResourceState: Equatable where Value: Equatable {}

extension ResourceState: CustomStringConvertible {
    /// A short description such as `loading(previous: nil)`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .loading(let previous): "loading(previous: \(previous.map { "\($0)" } ?? "nil"))"
        case .available(let value): "available(\(value))"
        case .failure(let error, let previous): "failure(\(error), previous: \(previous.map { "\($0)" } ?? "nil"))"
        }
    }
}

extension DiagnosticState {
    /// The state's case.
    @inlinable static func of<Value>(_ state: ResourceState<Value>) -> DiagnosticState {
        switch state {
        case .idle: DiagnosticState(.idle)
        case .loading: DiagnosticState(.loading)
        case .available: DiagnosticState(.available)
        case .failure(let error, _): DiagnosticState(.failure, error: error)
        }
    }
}
