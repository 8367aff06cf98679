import Foundation
import LMDB

// A second process for tests that need one: it does one thing to a store or environment,
// prints "ready" when that thing is in place, and waits to be killed.
//
//   imgstore-test-child hold-reader DIR   open DIR's environment, begin a read transaction, wait
//
// Tests start it, wait for "ready", send SIGKILL, and check what the store makes of it.


let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: imgstore-test-child hold-reader DIR\n".utf8))
    exit(64)
}
switch arguments[1] {
case "hold-reader":
    let environment = try Environment.open(path: arguments[2])
    try environment.read { _ in
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while true { sleep(60) }
    }
default:
    FileHandle.standardError.write(Data("unknown action \(arguments[1])\n".utf8))
    exit(64)
}
