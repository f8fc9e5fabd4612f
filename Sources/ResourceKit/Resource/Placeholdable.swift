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
    /// `count` copies of ``placeholder``.
    public static func placeholders(count: Int) -> [Self] {
        Array(repeating: placeholder, count: max(0, count))
    }
}

extension Resource where Value: Placeholdable {
    /// A resource that shows ``Placeholdable/placeholder`` and never touches the network, for previews.
    /// - Returns: The resource, `.available(placeholder)`.
    public static func placeholder() -> Resource { Resource(state: .available(Value.placeholder)) }
}
