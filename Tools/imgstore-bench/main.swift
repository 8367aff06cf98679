import CSQLite
func _probe() { _ = sqlite3_libversion() }
print("bench")
