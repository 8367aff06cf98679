// The server harness lives in SharedTierTestSupport (ImgstoreAdminTests runs the tool against
// a tier too); every file of this target sees it without importing it.
@_exported import SharedTierTestSupport
