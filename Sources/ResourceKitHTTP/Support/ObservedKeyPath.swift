/// The key paths a host names to Observation, one per concrete host type.
///
/// Forming `\.state` on a generic class instantiates the key path at run time, demangling its generic
/// arguments: about 2 µs, most of what making a resource cost. Each type's key path is formed once and
/// shared by all its objects. (`@usableFromInline`: the inlinable `Resource.init` calls it, which makes it
/// part of the module's API surface.)
@usableFromInline let observedKeyPaths = Locked<[ObjectIdentifier: any Sendable]>([:])

/// A cached key path, in a box that keeps its `Sendable`: a cast cannot name a marker protocol.
@usableFromInline struct SharedKeyPath<Root, Value>: Sendable {
    @usableFromInline let keyPath: any KeyPath<Root, Value> & Sendable

    @inlinable init(_ keyPath: any KeyPath<Root, Value> & Sendable) { self.keyPath = keyPath }
}

/// The key path `make` forms for `root`, formed once per type.
@inlinable package func observedKeyPath<Root: AnyObject, Value>(
    of root: Root.Type, _ make: () -> any KeyPath<Root, Value> & Sendable
) -> any KeyPath<Root, Value> & Sendable {
    let id = ObjectIdentifier(root)
    if let cached = observedKeyPaths.withLock({ $0[id] }) as? SharedKeyPath<Root, Value> { return cached.keyPath }
    let made = make()
    observedKeyPaths.withLock { $0[id] = SharedKeyPath(made) }
    return made
}
