import Foundation
import ImageStoreTestSupport
import Testing

/// Every `--json` document has exactly the keys and value types the README's "`--json` shapes"
/// section lists (this file mirrors it: change both together), with sorted keys and dates in
/// ISO 8601 with milliseconds.
@Suite struct JSONShapeTests {
    /// A JSON value's type, as the README writes it.
    indirect enum Kind: Sendable, CustomStringConvertible {
        case string, int, bool, date, hex16
        case nullable(Kind)
        case array(Kind)
        case object([String: Kind])
        /// An object whose keys are free (`{kind: Int}`), each value of this kind.
        case map(Kind)

        var description: String {
            switch self {
            case .string: "String"
            case .int: "Int"
            case .bool: "Bool"
            case .date: "Date"
            case .hex16: "16 hex digits"
            case let .nullable(kind): "\(kind)|null"
            case let .array(kind): "[\(kind)]"
            case let .object(keys): "{\(keys.keys.sorted().joined(separator: ", "))}"
            case let .map(kind): "{key: \(kind)}"
            }
        }
    }

    // MARK: - The README's shapes

    static let entry: [String: Kind] = [
        "bytes": .int, "checksum": .hex16, "createdAt": .date, "expiresAt": .nullable(.date),
        "format": .nullable(.string), "height": .nullable(.int), "lastAccessedAt": .date, "url": .string,
        "width": .nullable(.int),
    ]
    static let manifest: [String: Kind] = [
        "entries": .array(.object(entry.merging(["file": .string]) { $1 })), "format": .string, "version": .int,
    ]
    static let stats: [String: Kind] = [
        "dataFileBytes": .int, "diskBytes": .int, "entryCount": .int, "expiredBytes": .int, "expiredEntries": .int,
        "logicalBytes": .int, "mapSize": .int, "maxMapSize": .int, "occupiedBytes": .int, "usedBytes": .int,
        "maxDiskBytes": .nullable(.int), "path": .string,
        "sharedTier": .nullable(.object(["bytes": .int, "objects": .int, "prefix": .string, "url": .string])),
    ]
    static let verify: [String: Kind] = [
        "ok": .bool, "entriesChecked": .int, "logSegmentsChecked": .int, "tornLogBytes": .int,
        "problems": .array(.object(["kind": .string, "subject": .string, "detail": .string, "repaired": .bool])),
        "counts": .map(.int),
    ]
    static let wal: [String: Kind] = [
        "segments": .array(.object(["number": .int, "bytes": .int])), "spareSegments": .int, "bytes": .int,
    ]
    static let quarantined: [String: Kind] = ["bytes": .int, "quarantinedAt": .date, "reason": .string, "url": .nullable(.string)]
    static let validation: [String: Kind] = [
        "error": .nullable(.string), "format": .nullable(.string), "height": .nullable(.int), "ok": .bool,
        "path": .string, "trailingBytes": .nullable(.int), "width": .nullable(.int),
    ]
    static let importLine: [String: Kind] = [
        "bytes": .nullable(.int), "error": .nullable(.string), "format": .nullable(.string), "height": .nullable(.int),
        "ok": .bool, "path": .string, "url": .nullable(.string), "width": .nullable(.int),
    ]

    // MARK: - Commands

    @Test func lsAndExportManifest() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let list = try AdminBinary.run(["--store", store, "ls", "--json"])
            #expect(list.status == 0, "\(list.standardError)")
            let entries = try document(list.standardOutput)
            try expect(entries, is: .array(.object(Self.entry)), nonEmpty: true)
            expectSortedKeys(list.standardOutput)
            let export = try AdminBinary.run(["--store", store, "export", directory + "/out"])
            #expect(export.status == 0, "\(export.standardError)")
            let manifest = try #require(FileManager.default.contents(atPath: directory + "/out/manifest.json"))
            try expect(try document(manifest), is: .object(Self.manifest), nonEmpty: true)
            expectSortedKeys(manifest)
        }
    }

    @Test func statsAndWal() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            // A writer killed with entries only in its log (nothing applied): wal lists a segment.
            let child = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", store, "3", "sync", "keep-log"])
            try #require(child.wait(for: "ready"), "\(child.kill())")
            child.kill()
            let wal = try AdminBinary.run(["--store", store, "wal", "--json"])
            #expect(wal.status == 0, "\(wal.standardError)")
            try expect(try document(wal.standardOutput), is: .object(Self.wal), nonEmpty: true)
            expectSortedKeys(wal.standardOutput)
            let stats = try AdminBinary.run(["--store", store, "stats", "--json"])
            #expect(stats.status == 0, "\(stats.standardError)")
            try expect(try document(stats.standardOutput), is: .object(Self.stats))
            expectSortedKeys(stats.standardOutput)
        }
    }

    @Test func verifyWithProblemsAndQuarantine() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDamagedDemoStore(store)
            let verify = try AdminBinary.run(["--store", store, "verify", "--json"])
            #expect(verify.status == 4, "\(verify.standardError)")
            try expect(try document(verify.standardOutput), is: .object(Self.verify), nonEmpty: true)
            expectSortedKeys(verify.standardOutput)
            let repair = try AdminBinary.run(["--store", store, "verify", "--repair", "--json"])
            #expect(repair.status == 1, "\(repair.standardError)")
            try expect(try document(repair.standardOutput), is: .object(Self.verify), nonEmpty: true)
            expectSortedKeys(repair.standardOutput)
            let quarantine = try AdminBinary.run(["--store", store, "quarantine", "--json"])
            #expect(quarantine.status == 0, "\(quarantine.standardError)")
            try expect(try document(quarantine.standardOutput), is: .array(.object(Self.quarantined)), nonEmpty: true)
            expectSortedKeys(quarantine.standardOutput)
        }
    }

    @Test func validateAndImportLines() throws {
        try withTemporaryDirectory { directory throws in
            let tree = directory + "/tree"
            try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: true)
            try (try Fixtures.image("shapes.png") + Data("trailing".utf8)).write(to: URL(fileURLWithPath: tree + "/a.png"))
            try Data("not an image".utf8).write(to: URL(fileURLWithPath: tree + "/b.png"))
            let validate = try AdminBinary.run(["validate", "--json", tree + "/a.png", tree + "/b.png"])
            #expect(validate.status == 1)
            let validations = try lines(validate.standardOutput)
            #expect(validations.count == 2)
            for line in validations { try expect(try document(line), is: .object(Self.validation)) }
            #expect((try document(validations[0]) as? [String: Any])?["trailingBytes"] as? Int == 8)
            // Bytes that match no signature have no format: null, as import says, not "unknown".
            let unknown = try #require(try document(validations[1]) as? [String: Any])
            #expect(unknown["format"] is NSNull, "\(unknown)")
            #expect(unknown["ok"] as? Bool == false)
            let imported = try AdminBinary.run(["--store", directory + "/s", "import", "--json", tree])
            #expect(imported.status == 65, "\(imported.standardError)")
            let importLines = try lines(imported.standardOutput)
            #expect(importLines.count == 2)
            for line in importLines { try expect(try document(line), is: .object(Self.importLine)) }
            for line in validations + importLines { expectSortedKeys(line) }
        }
    }

    // MARK: - Checking

    private func document(_ data: Data) throws -> Any {
        try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    }

    private func lines(_ data: Data) throws -> [Data] {
        String(decoding: data, as: UTF8.self).split(separator: "\n").map { Data($0.utf8) }
    }

    /// `value` has the shape `kind`, recursively; with `nonEmpty`, the arrays and maps it holds
    /// must have elements (so their element shape was checked at all).
    private func expect(_ value: Any, is kind: Kind, nonEmpty: Bool = false, at path: String = "$",
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let datePattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/#
        let matches: Bool
        switch kind {
        case .string: matches = value is String
        // JSONSerialization gives NSNumbers; their type code tells integers ("i", "q"…) from
        // booleans ("c") and doubles ("d", "f").
        case .int: matches = (value as? NSNumber).map { "ilqsILQS".contains(String(cString: $0.objCType)) } ?? false
        case .bool: matches = (value as? NSNumber).map { String(cString: $0.objCType) == "c" } ?? false
        case .date: matches = (value as? String)?.wholeMatch(of: datePattern) != nil
        case .hex16: matches = (value as? String)?.wholeMatch(of: #/^[0-9a-f]{16}$/#) != nil
        case let .nullable(inner):
            if value is NSNull { return }
            return try expect(value, is: inner, nonEmpty: nonEmpty, at: path, sourceLocation: sourceLocation)
        case let .array(element):
            let array = value as? [Any]
            matches = array != nil
            if let array {
                if nonEmpty { #expect(!array.isEmpty, "\(path) is empty: its elements' shape is unchecked", sourceLocation: sourceLocation) }
                for (index, item) in array.enumerated() {
                    try expect(item, is: element, nonEmpty: nonEmpty, at: "\(path)[\(index)]", sourceLocation: sourceLocation)
                }
            }
        case let .object(keys):
            let object = value as? [String: Any]
            matches = object != nil
            if let object {
                #expect(Set(object.keys) == Set(keys.keys), "\(path): keys", sourceLocation: sourceLocation)
                for (key, inner) in keys {
                    if let item = object[key] {
                        try expect(item, is: inner, nonEmpty: nonEmpty, at: "\(path).\(key)", sourceLocation: sourceLocation)
                    }
                }
            }
        case let .map(inner):
            let object = value as? [String: Any]
            matches = object != nil
            if let object {
                if nonEmpty { #expect(!object.isEmpty, "\(path) is empty", sourceLocation: sourceLocation) }
                for (key, item) in object {
                    try expect(item, is: inner, nonEmpty: nonEmpty, at: "\(path).\(key)", sourceLocation: sourceLocation)
                }
            }
        }
        #expect(matches, "\(path) is \(value), not \(kind)", sourceLocation: sourceLocation)
    }

    /// The keys of each object appear in sorted order in the text (JSONSerialization drops the
    /// order, so this reads the text): each object's own keys, found by nesting depth.
    private func expectSortedKeys(_ data: Data, sourceLocation: SourceLocation = #_sourceLocation) {
        var stack: [[String]] = []
        var inString = false, escaped = false, current = ""
        var lastString: String?
        for character in String(decoding: data, as: UTF8.self) {
            if inString {
                if escaped { escaped = false; current.append(character) }
                else if character == "\\" { escaped = true }
                else if character == "\"" { inString = false; lastString = current }
                else { current.append(character) }
                continue
            }
            switch character {
            case "\"": inString = true; current = ""
            case "{": stack.append([])
            case "}":
                if let keys = stack.popLast() { #expect(keys == keys.sorted(), "keys out of order: \(keys)", sourceLocation: sourceLocation) }
            case ":": if let key = lastString, !stack.isEmpty { stack[stack.count - 1].append(key) }
            default: if !character.isWhitespace { lastString = nil }
            }
        }
    }
}
