//! NFS-like: one server; a client writes back its dirty data of a file when it
//! closes it, and when it opens a file another client wrote since its last
//! open it drops its cached clean pages of it (close-to-open consistency:
//! RFC 1813 and the Linux client, which checks the attributes at open;
//! [`crate::storage::Storage::revalidate`]).

use std::collections::BTreeMap;

use super::{FileSystemKind, Pieces, RomioDriver, one_server};

pub(crate) struct Nfs;

impl FileSystemKind for Nfs {
    fn map(&self, _file: usize, a: u64, b: u64, _servers: usize) -> BTreeMap<usize, Pieces> {
        one_server(a, b)
    }
    fn flush_on_close(&self) -> bool {
        true
    }
    fn stripes_across_servers(&self) -> bool {
        false
    }
    fn romio(&self) -> RomioDriver {
        RomioDriver {
            fs_type: "NFS:",
            striping_unit: 0,
            striping_factor: None,
            layout_fixed: false,
        }
    }
}
