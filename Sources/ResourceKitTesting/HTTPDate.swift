import Foundation

/// HTTP-dates (RFC 9110 §5.6.7) as whole seconds since 1970-01-01 00:00:00 GMT.
///
/// Written by hand rather than with `DateFormatter`: the backend dates every record it serves, and a
/// formatter is neither cheap to make nor `Sendable` to share.
enum HTTPDate {
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// The IMF-fixdate of a time, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func string(fromSecondsSince1970 seconds: Int64) -> String {
        let (days, second) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        let weekday = Int(floorDivision(days + 4, 7).remainder)  // 1970-01-01 was a Thursday.
        return "\(dayNames[weekday]), \(padded(day, 2)) \(monthNames[month - 1]) \(padded(Int(year), 4)) "
            + "\(padded(Int(second / 3600), 2)):\(padded(Int(second / 60 % 60), 2)):\(padded(Int(second % 60), 2)) GMT"
    }

    /// The time an HTTP-date names, in any of the three formats a recipient must accept (IMF-fixdate,
    /// RFC 850, asctime); `nil` for anything else, a list of dates included.
    static func seconds(from text: String) -> Int64? {
        // Split on single spaces, so that a doubled space shows as an empty field and fails.
        let fields = text.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: false)
            .map(String.init)
        if fields.count == 6, fields[0].hasSuffix(","), dayNames.contains(String(fields[0].dropLast())),
            fields[5] == "GMT"
        {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            return seconds(day: fields[1], month: fields[2], year: fields[3], time: fields[4])
        }
        if fields.count == 4, fields[0].hasSuffix(","), longDayNames.contains(String(fields[0].dropLast())),
            fields[3] == "GMT"
        {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard date.count == 3, let short = number(date[2], digits: 2) else { return nil }
            // RFC 9110: a two-digit year more than 50 years after now is in the past; the backend's now is 2000.
            let year = short <= 50 ? 2000 + short : 1900 + short
            return seconds(day: date[0], month: date[1], year: String(year), time: fields[2])
        }
        // asctime: Sun Nov  6 08:49:37 1994, where a one-digit day follows two spaces.
        var asctime = fields
        if asctime.count == 6, asctime[2].isEmpty, asctime[3].count == 1 {
            asctime.remove(at: 2)
            asctime[2] = "0" + asctime[2]
        }
        if asctime.count == 5, dayNames.contains(asctime[0]) {
            return seconds(day: asctime[2], month: asctime[1], year: asctime[4], time: asctime[3])
        }
        return nil
    }

    private static func seconds(day: String, month: String, year: String, time: String) -> Int64? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let day = number(day, digits: 2), let monthIndex = monthNames.firstIndex(of: month),
            let year = number(year, digits: 4), clock.count == 3,
            let hour = number(clock[0], digits: 2), let minute = number(clock[1], digits: 2),
            let second = number(clock[2], digits: 2),
            hour < 24, minute < 60, second <= 60, day >= 1, day <= daysIn(month: monthIndex + 1, of: year)
        else { return nil }
        let days = self.days(year: Int64(year), month: monthIndex + 1, day: day)
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// A number of exactly `digits` ASCII digits.
    private static func number(_ text: String, digits: Int) -> Int? {
        guard text.utf8.count == digits, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    private static func daysIn(month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        String(value).leftPadded(to: width)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    // Howard Hinnant's days_from_civil and civil_from_days: proleptic Gregorian, day 0 is 1970-01-01.
    private static func days(year: Int64, month: Int, day: Int) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = floorDivision(year, 400).quotient
        let yearOfEra = year - era * 400
        let dayOfYear = Int64((153 * ((month + 9) % 12) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        return (era * 400 + yearOfEra + (month <= 2 ? 1 : 0), month, day)
    }
}
