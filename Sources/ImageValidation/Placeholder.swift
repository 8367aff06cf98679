import CZlib
import CSpng
import CTurboJPEG
func _probe() { _ = crc32(0, nil, 0); _ = spng_ctx_new(0); _ = tjInitDecompress() }
