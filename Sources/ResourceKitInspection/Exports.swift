// The event feed, the activity indicator and the snapshots live where their data is: the feed, the activity and
// a session's snapshot in the HTTP layer, a store's snapshot in ResourceKit. A file that imports this module, as
// it did when they lived here, still finds every one of them.
@_exported public import ResourceKit
