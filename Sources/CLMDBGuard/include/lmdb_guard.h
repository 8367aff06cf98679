#pragma once
#include <lmdb.h>

/*
 * Fault-guarded LMDB calls (lmdb_guard.c says how they work).
 *
 * Each imgstore_mdb_* function runs the LMDB function of the same name with a per-thread
 * recovery point: a SIGSEGV, SIGBUS or failed LMDB assertion raised while it runs returns
 * MDB_CORRUPTED instead of killing the process. The caller must then abort the transaction
 * (its state is undefined) and treat the store as damaged.
 *
 * They live in one C file, not in inline functions of a header: each object file that
 * inlined a header's function got its own copy of its static state, so a guarded call
 * inlined into another module (as the optimiser does in release builds) set a recovery
 * point the signal handler never saw, and a damaged page aborted the process.
 */

/* Installs the SIGSEGV/SIGBUS handler once per process; call before the first guarded call. */
void imgstore_lmdb_install_fault_guard(void);
/* Routes `env`'s failed internal assertions to the guarded call's recovery point. */
int imgstore_lmdb_install_assert(MDB_env *env);

int imgstore_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int imgstore_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int imgstore_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
int imgstore_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int imgstore_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int imgstore_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int imgstore_mdb_txn_commit(MDB_txn *txn);
