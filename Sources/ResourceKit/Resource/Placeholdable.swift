/// A type with sample values, for previews, tests and loading skeletons.
public protocol Placeholdable {
    /// A sample value.
    static var placeholder: Self { get }
    /// `count` sample values; override to give each its own identity.
    /// - Parameter count: How many.
    /// - Returns: The values.
    static func placeholders(count: Int) -> [Self]
}

extension Placeholdable {
    /// `count` copies of ``placeholder``: none for a count below 1, at most 10,000.
    public static func placeholders(count: Int) -> [Self] {
        Array(repeating: placeholder, count: min(max(0, count), 10_000))
    }
}

extension Resource where Value: Placeholdable {
    /// A resource that shows ``Placeholdable/placeholder`` and never touches the network, for previews.
    /// - Returns: The resource, `.available(placeholder)`.
    public static func placeholder() -> Resource { Resource(state: .available(Value.placeholder)) }
}

extension ListResource where Item: Placeholdable {
    /// A list that shows `count` placeholders and never touches the network, for previews and loading
    /// skeletons. Every request fails with ``NetworkError/transport(code:message:)``
    /// (`notConnectedToInternet`): a refresh, a create, an update, a delete. `loadNextPage()` and `loadAll()`
    /// find no more to load and return the placeholders without a request.
    /// - Parameters:
    ///   - request: What selects the list.
    ///   - count: How many placeholders; 10 by default, none below 1, at most 10,000.
    ///   - isLoading: Show them as `loading(previous:)` instead of `available`, as a skeleton.
    /// - Returns: The list, one page loaded and no more to load.
    public static func placeholder(request: Remote.ListRequest, count: Int = 10, isLoading: Bool = false)
        -> ListResource
    {
        let items = Item.placeholders(count: min(max(0, count), 10_000))
        return ListResource(
            request: request,
            state: ListState(
                content: isLoading ? .loading(previous: items) : .available(items),
                pagination: PaginationStatus(hasMore: false, pagesLoaded: 1, totalCount: items.count)))
    }
}

extension ListResource where Item: Placeholdable, Remote.ListRequest == Void {
    /// A list that shows `count` placeholders and never touches the network, for previews.
    /// - Parameters:
    ///   - count: How many placeholders; 10 by default, none below 1, at most 10,000.
    ///   - isLoading: Show them as `loading(previous:)` instead of `available`, as a skeleton.
    /// - Returns: The list.
    public static func placeholder(count: Int = 10, isLoading: Bool = false) -> ListResource {
        placeholder(request: (), count: count, isLoading: isLoading)
    }
}
