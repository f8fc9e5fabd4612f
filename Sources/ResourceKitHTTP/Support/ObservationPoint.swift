import Observation

/// Publishes, through Observation, a change of some values of the object that owns it, for the values that
/// are not properties of an `Observable` type: the waiters of a credential refresh, a body's waiting reader,
/// an outbox's replay callers and kept changes, a persistence's generation.
///
/// The owner calls ``track()`` in each such value's getter and ``changed()`` after each change, outside its
/// locks. A view or a test reading the values inside `withObservationTracking` hears of the next change;
/// code that tracks nothing pays a registrar call per change and nothing else.
package final class ObservationPoint: Observable, Sendable {
    private let registrar = ObservationRegistrar()

    package init() {}

    /// What Observation tracks; it holds nothing.
    private var value: Void { registrar.access(self, keyPath: \.value) }

    /// Registers the caller's read of the owner's values with Observation.
    package func track() { value }

    /// Tells Observation that the owner's values changed; call it after the change.
    package func changed() { registrar.withMutation(of: self, keyPath: \.value) {} }
}
