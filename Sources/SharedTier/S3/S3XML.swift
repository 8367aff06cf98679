import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The little XML the S3 API answers with, flattened: the text of the root's leaf children
/// (`<Error><Code>…`, `<ListBucketResult><IsTruncated>…`), and one dictionary of leaf texts
/// per repeated record element (`<Contents>` in a listing).
struct S3XML {
    var top: [String: String] = [:]
    var records: [[String: String]] = []
    var root: String?

    /// Parses `data`, collecting the children of each `recordElement` as one record.
    /// - Throws: `invalidResponse` when `data` is not well-formed XML.
    static func parse(_ data: Data, recordElement: String = "Contents", operation: String) throws(SharedTierError) -> S3XML {
        let collector = Collector(recordElement: recordElement)
        let parser = XMLParser(data: data)
        parser.delegate = collector
        guard parser.parse() else {
            let reason = parser.parserError.map { String(describing: $0) } ?? "not well-formed XML"
            throw .invalidResponse(operation: operation, reason: reason)
        }
        return collector.result
    }

    private final class Collector: NSObject, XMLParserDelegate {
        let recordElement: String
        var result = S3XML()
        var path: [String] = []
        var text = ""
        var record: [String: String]?

        init(recordElement: String) { self.recordElement = recordElement }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                    qualifiedName: String?, attributes: [String: String] = [:]) {
            if path.isEmpty { result.root = name }
            if name == recordElement, path.count == 1 { record = [:] }
            path.append(name)
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if path.count == 2, name != recordElement {
                result.top[name] = text
            } else if path.count == 3, record != nil {
                record?[name] = text
            } else if path.count == 2, name == recordElement, let finished = record {
                result.records.append(finished)
                record = nil
            }
            path.removeLast()
            text = ""
        }
    }
}
