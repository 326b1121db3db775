//! piotwin's calibration (skeleton: filled in by the core issue).
#![warn(missing_docs, unreachable_pub)]
