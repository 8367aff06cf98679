import CLMDB
func _probe() { var e: OpaquePointer?; _ = mdb_env_create(&e) }
