//! A local file system: the one "server" is the node's own block layer.

use std::collections::BTreeMap;

use super::{FileSystemKind, Pieces, RomioDriver, one_server};

pub(crate) struct Local;

impl FileSystemKind for Local {
    fn map(&self, _file: usize, a: u64, b: u64, _servers: usize) -> BTreeMap<usize, Pieces> {
        one_server(a, b)
    }
    fn flush_on_close(&self) -> bool {
        false
    }
    fn stripes_across_servers(&self) -> bool {
        false
    }
    fn romio(&self) -> RomioDriver {
        RomioDriver {
            fs_type: "UFS: Generic ROMIO driver for all UNIX-like file systems",
            striping_unit: 0,
            striping_factor: None,
            layout_fixed: false,
        }
    }
}
