import CXXHash
func _probe() { _ = XXH3_64bits(nil, 0) }
