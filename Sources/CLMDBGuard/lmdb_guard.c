#include "lmdb_guard.h"

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

/*
 * Fault-guarded LMDB calls.
 *
 * LMDB trusts the pages it maps. A damaged page (a bad sector, a stray write) can make it
 * follow a garbage offset or flag and fault inside the library: LMDB 0.9.24 (Debian 12)
 * dereferences a NULL sub-cursor for a node whose F_DUPDATA bit is set in a database without
 * MDB_DUPSORT, and reads past the end of the file for a garbage size. The calls below run the
 * LMDB function with a per-thread recovery point: a SIGSEGV or SIGBUS raised while it runs
 * returns MDB_CORRUPTED instead of killing the process. The caller must then abort the
 * transaction (its state is undefined) and treat the store as damaged.
 *
 * A fault outside a guarded call is not ours: the handler reinstalls the previous handler
 * (the Swift runtime's backtracer, or the default) and returns, so the faulting instruction
 * runs again and faults the way it would have without us.
 *
 * The signal mask is not saved (no system call per LMDB call): SA_NODEFER keeps the signal
 * unblocked in the handler, so jumping out of it leaves the mask as it was.
 *
 * Only LMDB's own code runs between the sigsetjmp and the siglongjmp (no Swift frames, no
 * callbacks: the store sets no custom comparators), so no Swift state is skipped.
 */

/* This thread's recovery point while it runs a guarded call, else NULL. */
static __thread sigjmp_buf *recovery_point = NULL;
static sigjmp_buf **imgstore_lmdb_recovery(void) { return &recovery_point; }

/* The handlers installed before ours, for faults that are not ours. */
static struct sigaction previous_segv, previous_bus;
static struct sigaction *imgstore_lmdb_previous(int signal) {
    return signal == SIGBUS ? &previous_bus : &previous_segv;
}

static void imgstore_lmdb_fault(int signal, siginfo_t *info, void *context) {
    (void)info; (void)context;
    sigjmp_buf *recovery = *imgstore_lmdb_recovery();
    if (recovery != NULL) {
        *imgstore_lmdb_recovery() = NULL;
        siglongjmp(*recovery, signal);
    }
    sigaction(signal, imgstore_lmdb_previous(signal), NULL);
}

/* Installs the handler once per process; called before the first guarded call. */
void imgstore_lmdb_install_fault_guard(void) {
    struct sigaction action;
    action.sa_sigaction = imgstore_lmdb_fault;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &action, imgstore_lmdb_previous(SIGSEGV));
    sigaction(SIGBUS, &action, imgstore_lmdb_previous(SIGBUS));
}

/* LMDB's assert() callback: a failed internal assertion (a damaged page breaking one of its
   invariants) inside a guarded call returns MDB_CORRUPTED like a fault. Outside one, LMDB
   goes on to print the message and abort(), as it would without us. */
static void imgstore_lmdb_assert(MDB_env *env, const char *message) {
    (void)env; (void)message;
    sigjmp_buf *recovery = *imgstore_lmdb_recovery();
    if (recovery != NULL) {
        *imgstore_lmdb_recovery() = NULL;
        siglongjmp(*recovery, SIGABRT);
    }
}

int imgstore_lmdb_install_assert(MDB_env *env) {
    return mdb_env_set_assert(env, imgstore_lmdb_assert);
}

#define IMGSTORE_LMDB_GUARDED(call) \
    do { \
        sigjmp_buf recovery; \
        sigjmp_buf *outer = *imgstore_lmdb_recovery(); \
        if (sigsetjmp(recovery, 0) != 0) { *imgstore_lmdb_recovery() = outer; return MDB_CORRUPTED; } \
        *imgstore_lmdb_recovery() = &recovery; \
        int rc = (call); \
        *imgstore_lmdb_recovery() = outer; \
        return rc; \
    } while (0)

int imgstore_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    IMGSTORE_LMDB_GUARDED(mdb_get(txn, dbi, key, data));
}
int imgstore_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op) {
    IMGSTORE_LMDB_GUARDED(mdb_cursor_get(cursor, key, data, op));
}
int imgstore_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags) {
    IMGSTORE_LMDB_GUARDED(mdb_put(txn, dbi, key, data, flags));
}
int imgstore_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    IMGSTORE_LMDB_GUARDED(mdb_del(txn, dbi, key, data));
}
int imgstore_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del) {
    IMGSTORE_LMDB_GUARDED(mdb_drop(txn, dbi, del));
}
int imgstore_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi) {
    IMGSTORE_LMDB_GUARDED(mdb_dbi_open(txn, name, flags, dbi));
}
int imgstore_mdb_txn_commit(MDB_txn *txn) {
    IMGSTORE_LMDB_GUARDED(mdb_txn_commit(txn));
}
