/// What an event of a kind a module above the HTTP layer adds tells, in slots that module names: four texts and
/// three counts, held inline so that an event costs no allocation, and how that module describes them in an
/// event's one-line summary. ResourceKit's `object`, `stateSummary`, `callers`… are its names for these slots;
/// this module reads none of them.
package struct DiagnosticDetails: Sendable, Equatable {
    private var text0: String?
    private var text1: String?
    private var text2: String?
    private var text3: String?
    private var count0: Int?
    private var count1: Int?
    private var count2: Int?

    /// The parts the module that named the slots adds to an event's summary, after its kind. Set by that
    /// module's properties: an event whose slots nobody set describes none.
    package var describe: (@Sendable (DiagnosticEvent) -> [String])?

    init() {}

    /// Text slot `slot` (0 to 3); any other slot holds nothing.
    package subscript(text slot: Int) -> String? {
        get {
            switch slot {
            case 0: text0
            case 1: text1
            case 2: text2
            case 3: text3
            default: nil
            }
        }
        set {
            switch slot {
            case 0: text0 = newValue
            case 1: text1 = newValue
            case 2: text2 = newValue
            case 3: text3 = newValue
            default: break
            }
        }
    }

    /// Count slot `slot` (0 to 2); any other slot holds nothing.
    package subscript(count slot: Int) -> Int? {
        get {
            switch slot {
            case 0: count0
            case 1: count1
            case 2: count2
            default: nil
            }
        }
        set {
            switch slot {
            case 0: count0 = newValue
            case 1: count1 = newValue
            case 2: count2 = newValue
            default: break
            }
        }
    }

    /// Equal when the slots are: how a summary is written is not part of what an event tells.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.text0 == rhs.text0 && lhs.text1 == rhs.text1 && lhs.text2 == rhs.text2 && lhs.text3 == rhs.text3
            && lhs.count0 == rhs.count0 && lhs.count1 == rhs.count1 && lhs.count2 == rhs.count2
    }
}
