public import ResourceKitHTTP

// `superseded` is a list's idea, so it is ResourceKit's code, added to the HTTP layer's extensible set as a
// module adds any code: a `ListResource` answers it, and nothing below this module makes one.

extension NetworkError.Code {
    /// A newer operation replaced what this one worked on: ``NetworkError/superseded``.
    public static let superseded = NetworkError.Code("superseded")
}

extension NetworkError {
    /// The operation's answer was discarded because a newer operation replaced what it worked on: a
    /// ``ListResource`` next page still in flight when a refresh's first page arrived belongs to the old list, so
    /// its callers get this instead of the old list. Its ``message`` is empty: the code says it all.
    public static var superseded: NetworkError { NetworkError(.superseded, detail: "") }
}
