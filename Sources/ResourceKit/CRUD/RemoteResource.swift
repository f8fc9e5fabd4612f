/// Describes one kind of remote value. Usually a stateless `struct RemotePost`.
///
/// Add ``Creatable``, ``Readable``, ``Updatable``, ``Deletable`` and ``Listable`` for what the API supports;
/// none of them requires another, so a write-only API describes no reads.
public protocol RemoteResource: Sendable {
    /// The value a ``Resource`` holds.
    associatedtype Value: Sendable

    /// The version of a value, for the order of changes the server pushes (``ResourceStore/apply(_:as:)``):
    /// a pushed value older than the one a holder shows when it arrives never replaces it, even when it lags
    /// behind that holder's own read or update. An answer to a request asked before a push arrived never undoes
    /// the push, whatever its version: the next read brings a newer value. `nil` (the default) leaves the order
    /// to the store's ranks alone.
    ///
    /// Return what the server bumps on each write: PocketBase's `updated` (``ItemVersion/init(_:)-(String)``
    /// compares such timestamps as text), a revision counter, a sequence number.
    /// - Parameter value: The value.
    /// - Returns: Its version, or `nil` when it has none.
    static func version(of value: Value) -> ItemVersion?
}

extension RemoteResource {
    /// No version: the store's ranks order the changes.
    public static func version(of value: Value) -> ItemVersion? { nil }
}

/// A remote value that can be read.
///
/// ```swift
/// struct RemotePost: Readable {
///     typealias Value = Post
///     typealias ReadRequest = Post.ID
///     static func readEndpoint(for id: Post.ID) -> Endpoint { Endpoint(.get, "posts").appending(id: id) }
/// }
/// ```
public protocol Readable: RemoteResource {
    /// What identifies the value to read; `Void` by default.
    associatedtype ReadRequest: Sendable = Void
    /// The decoded response; the value itself by default.
    associatedtype ReadResponse: Decodable & Sendable = Value
    /// Builds the endpoint for a read.
    /// - Parameter request: The read request.
    /// - Returns: The endpoint.
    /// - Throws: ``NetworkError`` when the request cannot be expressed.
    static func readEndpoint(for request: ReadRequest) throws(NetworkError) -> Endpoint
    /// Maps the response to the value; identity when the response is the value.
    /// - Parameter response: The decoded response.
    /// - Returns: The value.
    /// - Throws: ``NetworkError`` when the response does not hold a value.
    static func value(fromRead response: ReadResponse) throws(NetworkError) -> Value
    /// Derives a read request from the current value, for ``Resource/read(policy:)``.
    /// - Parameter value: The current value, if any.
    /// - Returns: The request, or `nil` when none can be derived.
    static func readRequest(from value: Value?) -> ReadRequest?
    /// How long a loaded value stays fresh for ``ReadPolicy/skipIfFresh`` and
    /// ``ReadPolicy/staleWhileRevalidate``; zero by default, so that those policies read every time until
    /// a type says how long its values may be shown without asking.
    static var maxAge: Duration { get }
    /// What a value counts against a ``ResourceStore``'s capacity once nobody holds its resource; 1 by
    /// default, so the capacity counts values. Return, say, its size in kilobytes to bound memory instead.
    /// - Parameter value: The value the store would remember.
    /// - Returns: The cost; below 1 counts as 1. A value costing more than the capacity is not remembered.
    static func cost(of value: Value) -> Int
}

extension Readable {
    /// Zero: a value is never fresh.
    public static var maxAge: Duration { .zero }
    /// One: the capacity counts values.
    public static func cost(of value: Value) -> Int { 1 }
}

extension Readable where ReadResponse == Value {
    /// The response is the value.
    public static func value(fromRead response: ReadResponse) throws(NetworkError) -> Value { response }
}

extension Readable {
    /// No request can be derived by default.
    public static func readRequest(from value: Value?) -> ReadRequest? { nil }
}

extension Readable where ReadRequest == Void {
    /// A `Void` request needs no value.
    public static func readRequest(from value: Value?) -> ReadRequest? { () }
}

/// A remote value that can be created.
public protocol Creatable: RemoteResource {
    /// What to send; the value itself by default.
    associatedtype CreateRequest: Sendable = Value
    /// The decoded response; the value itself by default.
    associatedtype CreateResponse: Decodable & Sendable = Value
    /// Builds the endpoint for a create.
    /// - Parameter request: The create request.
    /// - Returns: The endpoint, with its body.
    /// - Throws: ``NetworkError`` when the request cannot be expressed.
    static func createEndpoint(for request: CreateRequest) throws(NetworkError) -> Endpoint
    /// Maps the response to the created value; identity when the response is the value.
    /// - Parameter response: The decoded response.
    /// - Returns: The created value.
    /// - Throws: ``NetworkError`` when the response does not hold a value.
    static func value(fromCreate response: CreateResponse) throws(NetworkError) -> Value
    /// Derives a create request from the current value, for ``Resource/create()``.
    /// - Parameter value: The current value, if any.
    /// - Returns: The request, or `nil` when none can be derived.
    static func createRequest(from value: Value?) -> CreateRequest?
}

extension Creatable where CreateResponse == Value {
    /// The response is the value.
    public static func value(fromCreate response: CreateResponse) throws(NetworkError) -> Value { response }
}

extension Creatable {
    /// No request can be derived by default.
    public static func createRequest(from value: Value?) -> CreateRequest? { nil }
}

extension Creatable where CreateRequest == Value {
    /// The value is the request.
    public static func createRequest(from value: Value?) -> CreateRequest? { value }
}

extension Creatable where CreateRequest == Void {
    /// A `Void` request needs no value.
    public static func createRequest(from value: Value?) -> CreateRequest? { () }
}

/// A remote value that can be updated.
public protocol Updatable: RemoteResource {
    /// What to send; the value itself by default.
    associatedtype UpdateRequest: Sendable = Value
    /// The decoded response; the value itself by default.
    associatedtype UpdateResponse: Decodable & Sendable = Value
    /// Builds the endpoint for an update.
    /// - Parameter request: The update request.
    /// - Returns: The endpoint, with its body.
    /// - Throws: ``NetworkError`` when the request cannot be expressed.
    static func updateEndpoint(for request: UpdateRequest) throws(NetworkError) -> Endpoint
    /// Maps the response to the updated value; identity when the response is the value.
    /// - Parameter response: The decoded response.
    /// - Returns: The updated value.
    /// - Throws: ``NetworkError`` when the response does not hold a value.
    static func value(fromUpdate response: UpdateResponse) throws(NetworkError) -> Value
    /// Derives an update request from the current value, for ``Resource/update()``.
    /// - Parameter value: The current value.
    /// - Returns: The request, or `nil` when none can be derived.
    static func updateRequest(from value: Value) -> UpdateRequest?
}

extension Updatable where UpdateResponse == Value {
    /// The response is the value.
    public static func value(fromUpdate response: UpdateResponse) throws(NetworkError) -> Value { response }
}

extension Updatable {
    /// No request can be derived by default.
    public static func updateRequest(from value: Value) -> UpdateRequest? { nil }
}

extension Updatable where UpdateRequest == Value {
    /// The value is the request.
    public static func updateRequest(from value: Value) -> UpdateRequest? { value }
}

/// A remote value that can be deleted.
///
/// A hard delete (the default) leaves the resource `.idle`; a soft delete returns the value the server
/// keeps, such as a record marked archived, from ``value(fromDelete:)``.
public protocol Deletable: RemoteResource {
    /// What identifies the value to delete; the value itself by default.
    associatedtype DeleteRequest: Sendable = Value
    /// The decoded response; ignored by default.
    associatedtype DeleteResponse: Decodable & Sendable = EmptyResponse
    /// Builds the endpoint for a delete.
    /// - Parameter request: The delete request.
    /// - Returns: The endpoint.
    /// - Throws: ``NetworkError`` when the request cannot be expressed.
    static func deleteEndpoint(for request: DeleteRequest) throws(NetworkError) -> Endpoint
    /// The value after a soft delete, or `nil` for a hard delete (the default).
    /// - Parameter response: The decoded response.
    /// - Returns: The value the resource holds afterwards, or `nil`.
    /// - Throws: ``NetworkError`` when the response cannot be mapped.
    static func value(fromDelete response: DeleteResponse) throws(NetworkError) -> Value?
    /// Derives a delete request from the current value, for ``Resource/delete()``.
    /// - Parameter value: The current value.
    /// - Returns: The request, or `nil` when none can be derived.
    static func deleteRequest(from value: Value) -> DeleteRequest?
}

extension Deletable {
    /// A hard delete.
    public static func value(fromDelete response: DeleteResponse) throws(NetworkError) -> Value? { nil }
    /// No request can be derived by default.
    public static func deleteRequest(from value: Value) -> DeleteRequest? { nil }
}

extension Deletable where DeleteRequest == Value {
    /// The value is the request.
    public static func deleteRequest(from value: Value) -> DeleteRequest? { value }
}

extension Deletable where DeleteRequest == Void {
    /// A `Void` request needs no value.
    public static func deleteRequest(from value: Value) -> DeleteRequest? { () }
}
