/// Names one change a store extension shows (``ShownChange``): what the store withdraws, and what the answer to a
/// create replaces in the lists that showed it.
package struct ChangeMark: Sendable {
    let token: LayerToken

    package init() { token = LayerToken() }

    /// Marks the change ended before its answer is shown: a holder drops it in the same change of state as it
    /// takes the answer, and one that hears of its start late never shows it. ``ResourceStore/withdraw(_:)``
    /// still tells the holders it is gone.
    package func end() { token.end() }
}

/// A change a store extension shows over an item in every holder of it until the extension withdraws it: the
/// outbox's kept changes. The extension hands the store values; the store makes what its holders hear of them.
package struct ShownChange<Item: Identifiable & Sendable>: Sendable where Item.ID: Sendable {
    let id: Item.ID
    /// What holders show: the item's new value, or nothing, for its removal.
    let value: Item?
    /// Whether it shows an item a create will make: lists place it where they place created items.
    let isCreation: Bool
    let mark: ChangeMark

    package init(id: Item.ID, value: Item?, isCreation: Bool, mark: ChangeMark) {
        self.id = id
        self.value = value
        self.isCreation = isCreation
        self.mark = mark
    }

    /// What a holder of the item hears when the change starts showing.
    var layer: ItemNews<Item, Item.ID> {
        .layer(id, token: mark.token, value.map { .value($0) } ?? .removed, created: isCreation)
    }
}

extension ResourceStore {
    /// Shows `change` over its item in every live holder of it. A holder made later asks the store's extensions
    /// for the changes they show (`StoreExtension.shownChanges(of:id:)`).
    package func show<Item>(_ change: ShownChange<Item>) {
        publish([change.layer], from: ObjectIdentifier(self))
    }

    /// Ends `change`: every holder stops showing it, and one that hears of its start late never shows it.
    package func withdraw<Item>(_ change: ShownChange<Item>) {
        // Ended before the news leaves (see `LayerToken`).
        change.mark.token.end()
        publish([ItemNews<Item, Item.ID>.unlayer(change.id, token: change.mark.token)], from: ObjectIdentifier(self))
    }

    /// What the extensions show of `Item` (of item `id`, or every item of the type for `id` `nil`) for a holder
    /// made now: the news it hears, oldest first (a holder drops a change that has ended, see `LayerToken`).
    func shownLayers<Item: Identifiable & Sendable>(
        of type: Item.Type, id: Item.ID?
    ) -> [ItemNews<Item, Item.ID>] where Item.ID: Sendable {
        extensions.flatMap { $0.shownChanges(of: type, id: id) }.map(\.layer)
    }
}
