//! Run reports: the common JSON/CSV schema shared by real and twin runs, and the
//! human-readable tables in each original benchmark's style.
