public import Synchronization

/// Where an object keeps the subject its events name, made by its first event. An atomic of its own rather than
/// `AtomicLazyReference`, whose `load` is a generic call that is not specialized: every event paid for it.
@usableFromInline struct DiagnosticSubjectSlot: ~Copyable, Sendable {
    @usableFromInline let storage = Atomic<Unmanaged<DiagnosticSubject>?>(nil)

    @inlinable init() {}

    /// The subject, made by `make` the first time; when two threads make one at once, both get the first.
    @inlinable func subject(_ make: () -> DiagnosticSubject) -> DiagnosticSubject {
        if let existing = storage.load(ordering: .acquiring) { return existing.takeUnretainedValue() }
        let made = Unmanaged.passRetained(make())
        let (exchanged, original) = storage.compareExchange(
            expected: nil, desired: made, ordering: .acquiringAndReleasing)
        guard !exchanged, let original else { return made.takeUnretainedValue() }
        made.release()
        return original.takeUnretainedValue()
    }

    deinit { storage.load(ordering: .acquiring)?.release() }
}
