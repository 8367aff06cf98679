import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// The documentation's examples compile: each `swift` block of the README's Observability
/// section and of the "Using imgstore in a service" article is in this file (the functions
/// below, compiled but never run), and a test checks that the documents still say the same.
@Suite struct SnippetTests {
    /// Stands in for swift-log's `Logger` (no outside packages here): the same calls compile
    /// against both.
    struct Logger {
        init(label: String) {}
        func error(_ message: String) {}
        func warning(_ message: String) {}
        func info(_ message: String) {}
    }

    // MARK: - The examples

    static func readmeEventBridge() {
        var configuration = ImageStore.Configuration()
        let logger = Logger(label: "imgstore")
        configuration.eventHandler = { event in
            switch event.severity {
            case .error: logger.error("\(event)")
            case .warning: logger.warning("\(event)")
            case .info: logger.info("\(event)")
            }
        }
        _ = configuration
    }

    static func articleService() throws {
        var configuration = ImageStore.Configuration()
        configuration.maxDiskBytes = 20 << 30                  // evict least recently used past 20 GiB
        configuration.eventHandler = { event in                // background failures, recoveries, evictions
            print(event.severity, event)                       // or your logger; see the README
        }
        let store = try ImageStore(path: "/var/cache/my-service/images", configuration: configuration)
        let loader = try ImageLoader(store: store)

        func handleImage(url: String) async -> (status: Int, contentType: String, body: Data) {
            do {
                let image = try await loader.load(url)
                return (200, "image/" + image.facts.format.rawValue, image.data)
            } catch .recentlyFailed, .httpStatus, .invalidImage {
                return (404, "text/plain", Data("no such image\n".utf8))
            } catch {
                return (502, "text/plain", Data("\(error)\n".utf8))
            }
        }

        func handleMetrics() -> String {
            var exposition = PrometheusExposition()
            exposition.append(store.metrics, labels: ["store": "images"])
            exposition.append(loader.metrics, labels: ["store": "images"])
            return exposition.text                             // Content-Type: text/plain; version=0.0.4
        }

        func shutDown() {
            store.close()                                      // later calls throw ImageStoreError.closed
        }
        _ = (handleImage, handleMetrics, shutDown)
    }

    // MARK: - The documents say the same

    @Test(arguments: ["README.md", "Sources/ImageStore/ImageStore.docc/UsingImgstoreInAService.md"])
    func everySwiftBlockIsCompiledHere(document: String) throws {
        let text = try String(contentsOfFile: Fixtures.repositoryRoot + "/" + document, encoding: .utf8)
        let source = Self.trimmedLines(try String(contentsOfFile: #filePath, encoding: .utf8))
        let blocks = Self.swiftBlocks(in: document == "README.md" ? Self.section("## Observability", of: text) : text)
        #expect(!blocks.isEmpty)
        for block in blocks {
            let lines = Self.trimmedLines(block).filter { !$0.hasPrefix("import ") }  // this file imports them at the top
            let found = (0...(source.count - lines.count)).contains { Array(source[$0..<($0 + lines.count)]) == lines }
            #expect(found, "\(document): this block is not in SnippetTests.swift:\n\(block)")
        }
    }

    /// The text from `heading` to the next heading of the same level.
    static func section(_ heading: String, of text: String) -> String {
        guard let start = text.range(of: "\n" + heading + "\n") else { return "" }
        let rest = text[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    static func swiftBlocks(in text: String) -> [String] {
        text.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "\n```").first }
    }

    /// Lines without their indentation, blank ones left out: the examples sit deeper here.
    static func trimmedLines(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
