import Foundation
import ImageStore
import SharedTier

// One host of a fleet, in its own process, for the fleet test:
//
//   imgstore-loader-child STORE_DIR ENDPOINT BUCKET ACCESS_KEY SECRET OWN_URLS ALL_URLS
//
// Opens a store at STORE_DIR and a loader over it with the shared tier (ENDPOINT, BUCKET, the
// key pair). Loads each of OWN_URLS (comma-separated), printing "own URL SOURCE", waits until
// its uploads have landed and prints "ready". Then it waits for a line on stdin (the test sends
// one once every host is ready), loads each of ALL_URLS printing "load URL SOURCE", waits for
// its uploads, prints "done" and exits 0. A failed load prints "failed URL ERROR" and exits 1.

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count == 8 else {
    FileHandle.standardError.write(Data("usage: imgstore-loader-child STORE_DIR ENDPOINT BUCKET ACCESS_KEY SECRET OWN_URLS ALL_URLS\n".utf8))
    exit(64)
}
let urls = { (list: String) in list.split(separator: ",").map(String.init) }
var storeConfiguration = ImageStore.Configuration()
storeConfiguration.validation = .rejectInvalid
storeConfiguration.durability = .none
let store = try ImageStore(path: arguments[1], configuration: storeConfiguration)
let s3 = S3Configuration(endpoint: URL(string: arguments[2])!, bucket: arguments[3],
                         credentials: S3Credentials(accessKeyID: arguments[4], secretAccessKey: arguments[5]),
                         connectTimeout: .seconds(5), requestTimeout: .seconds(10))
let tier = try SharedTier(configuration: .init(s3: s3))
var loaderConfiguration = ImageLoader.Configuration()
loaderConfiguration.downloadTimeout = .seconds(60)
let loader = try ImageLoader(store: store, configuration: loaderConfiguration, sharedTier: tier)

func load(_ list: [String], as label: String) async {
    for url in list {
        do {
            say("\(label) \(url) \(try await loader.image(for: url).source)")
        } catch {
            say("failed \(url) \(error)")
            exit(1)
        }
    }
    await tier.waitForUploads()
}

await load(urls(arguments[6]), as: "own")
say("ready")
_ = readLine()
await load(urls(arguments[7]), as: "load")
store.close()
say("done")
exit(0)
