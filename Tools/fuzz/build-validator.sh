#!/usr/bin/env bash
# Builds ImageValidation's sources and one driver file into a standalone binary outside SwiftPM: the fuzz
# target, the agreement probe and the throughput probe. The one place that lists the validator's C parts
# (system libraries, and CImageScan's vector scan, compiled here with the same sanitizers).
#
#   Tools/fuzz/build-validator.sh OUTPUT MODULE DRIVER.swift [fuzz]     run from the repository root
#
# fuzz: AddressSanitizer + libFuzzer, with debug info; otherwise optimised.
set -euo pipefail
out=$1 module=$2 driver=$3 mode=${4:-}
cflags=(-O2) swiftflags=(-O)
if [ "$mode" = fuzz ]; then
  cflags+=(-g -fsanitize=fuzzer-no-link,address)
  swiftflags+=(-g -sanitize=fuzzer,address)
fi
scan="$out.image_scan.o"
clang "${cflags[@]}" -I Sources/CImageScan/include -c Sources/CImageScan/image_scan.c -o "$scan"
swiftc "${swiftflags[@]}" -parse-as-library -module-name "$module" \
  -I Sources/CZlib -I Sources/CDeflate -I Sources/CSpng -I Sources/CTurboJPEG -I Sources/CImageScan/include \
  Sources/ImageValidation/*.swift "$driver" "$scan" -lz -ldeflate -lspng -lturbojpeg -o "$out"
