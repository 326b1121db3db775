//! The scenario schema, declared once: every key with what it holds, its
//! default and one line of documentation. The reader takes each table's
//! allowed keys from here (and so its "unknown key; allowed …" messages), the
//! calibratable keys are the numeric ones here, every value the reader takes
//! is checked against its kind and declared default here (in debug builds),
//! and `piotwin scenario schema` prints this table: the schema section of
//! `scenarios/README.md` is that output (a test keeps them equal).

use super::KeyKind;

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// A quantity with a unit (or a plain number): see [`KeyKind`].
    Quantity(KeyKind),
    /// A whole number.
    Integer,
    /// A number from 0 (inclusive) to 1 (exclusive).
    Fraction,
    /// One of a few words (or numbers), the first the default where it has one.
    Choice(&'static [&'static str]),
    /// A string.
    Text,
    /// A table of the keys below it.
    Table,
    /// A list of tables (`[[…]]`) of the keys below it.
    Tables,
    /// A table of free keys (notes, calibration entries).
    Free,
}

/// When a key may be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// It must be given.
    Required,
    /// This value (in the file's syntax).
    Value(&'static str),
    /// Worked out from other keys, or absent has a meaning: the text says which.
    Otherwise(&'static str),
}

/// One key of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The key's path, list indices left out (`nodes.cache.write_bw`).
    pub path: &'static str,
    /// What it holds.
    pub holds: Holds,
    /// When it may be left out.
    pub default: Default,
    /// Device kinds the key belongs to (under `server.device`, `…member`); empty: any.
    pub devices: &'static [&'static str],
    /// What it is.
    pub doc: &'static str,
}

use self::Default::{Otherwise, Required, Value};
use Holds::{Choice, Fraction, Free, Integer, Quantity, Table, Tables, Text};
use KeyKind::{Flops, Number, Rate, Size, Time};

const fn key(path: &'static str, holds: Holds, default: Default, doc: &'static str) -> Key {
    dev(path, &[], holds, default, doc)
}

const fn dev(
    path: &'static str,
    devices: &'static [&'static str],
    holds: Holds,
    default: Default,
    doc: &'static str,
) -> Key {
    Key {
        path,
        holds,
        default,
        devices,
        doc,
    }
}

const SSD: &[&str] = &["ssd"];
const HDD: &[&str] = &["hdd"];
const RAID: &[&str] = &["raid"];

/// The keys outside devices, in the order the reader lists them.
const KEYS: &[Key] = &[
    key("name", Text, Required, "short name of the system"),
    key("description", Text, Value("\"\""), "one line describing it"),
    key(
        "seed",
        Integer,
        Required,
        "default RNG seed of its runs (SSD latency jitter)",
    ),
    key(
        "source",
        Free,
        Otherwise("none"),
        "where the numbers came from: `topic = \"note\"` (or a key path)",
    ),
    key(
        "nodes",
        Tables,
        Required,
        "groups of identical compute nodes; ranks are placed by block, group after group",
    ),
    key(
        "placement",
        Choice(&["block", "round-robin"]),
        Value("\"block\""),
        "how ranks are placed on the nodes: block (node after node, `cores` each) or round-robin (rank r on the (r mod nodes)-th node; `mpiexec -rr`, Open MPI `--map-by node`)",
    ),
    key("network", Table, Required, "the interconnect"),
    key("server", Table, Required, "the I/O servers"),
    key(
        "filesystem",
        Table,
        Otherwise("a local file system"),
        "the file system",
    ),
    key(
        "metadata",
        Table,
        Required,
        "metadata costs at the server, queued one at a time",
    ),
    key("mpiio", Table, Required, "MPI-IO software costs"),
    key(
        "calibration",
        Free,
        Otherwise("none"),
        "fitted keys: `[calibration.\"<key path>\"]` with `value`, `low`, `high` (the key's unit), `probe`, `quality` (written by `piotwin calibrate`)",
    ),
    key(
        "run_to_run",
        Table,
        Otherwise("none"),
        "how much repeated runs of the same probe differed (written by `piotwin calibrate`); `--samples` draws a whole-machine speed factor from it",
    ),
    key(
        "run_to_run.spread",
        Quantity(Number),
        Required,
        "the standard deviation of the log of a repeated probe's bandwidth (0.1: about ±10 % per run)",
    ),
    key(
        "run_to_run.probe",
        Text,
        Value("\"\""),
        "the repeated probes it was measured over",
    ),
    key(
        "run_to_run.quality",
        Text,
        Value("\"\""),
        "how many repetitions in how many groups",
    ),
    key(
        "model_error",
        Table,
        Otherwise("none"),
        "how far the calibrated twin's predictions of calibration's own IOR probes were, beyond run-to-run noise (written by `piotwin calibrate`); `--samples` draws a factor on each run's rates and times from it",
    ),
    key(
        "model_error.spread",
        Quantity(Number),
        Required,
        "the standard deviation of ln(measured / predicted) beyond the run-to-run noise",
    ),
    key(
        "model_error.probe",
        Text,
        Value("\"\""),
        "the probes it was measured over",
    ),
    key(
        "model_error.quality",
        Text,
        Value("\"\""),
        "shapes, root mean square and bias of the log errors",
    ),
    // [[nodes]]
    key("nodes.name", Text, Required, "the group's name"),
    key("nodes.count", Integer, Required, "nodes in the group (≥ 1)"),
    key(
        "nodes.cores",
        Integer,
        Required,
        "cores per node (≥ 1); ranks beyond them share cores (processor sharing)",
    ),
    key("nodes.memory", Quantity(Size), Required, "memory per node"),
    key(
        "nodes.nic_bw",
        Quantity(Rate),
        Required,
        "NIC bandwidth per direction",
    ),
    key(
        "nodes.nic_latency",
        Quantity(Time),
        Required,
        "NIC latency per message",
    ),
    key(
        "nodes.switch",
        Text,
        Value("\"core\""),
        "the switch the group's NICs attach to (`\"torus\"`: one node per router of `network.torus`, spread evenly)",
    ),
    key(
        "nodes.compute",
        Table,
        Required,
        "per-core rates per kernel kind",
    ),
    key(
        "nodes.cache",
        Table,
        Otherwise("no page cache"),
        "the client page cache (Linux write-back)",
    ),
    key(
        "nodes.memory_bw",
        Quantity(Rate),
        Otherwise("`compute.memcpy`"),
        "the node's memory bus, shared by its intra-node messages and page-cache copies (each copy at most one core's `memcpy`)",
    ),
    key(
        "nodes.message_bw",
        Quantity(Rate),
        Otherwise("`compute.memcpy`"),
        "per-core rate of a message between two ranks of the node (MPI's shared-memory transport: a copy through buffers both processes map, in pieces each hands over), at most this on the sender's core and through the memory bus",
    ),
    key(
        "nodes.memory_read_bw",
        Quantity(Rate),
        Otherwise("`memory_bw`"),
        "the memory bus's rate for copies out of the page cache into buffers within `compute.private_cache` (such a read crosses the bus once, a write into the cache more than once): those reads take the bus at `memory_bw` / this per byte",
    ),
    key(
        "nodes.memory_write_bw",
        Quantity(Rate),
        Otherwise("`memory_bw`"),
        "the rate, over the whole node, of writes into new page-cache pages (the bus and the kernel's page allocation they share): those writes take the bus at `memory_bw` / this per byte; rewrites of cached pages take it at `memory_bw`",
    ),
    key(
        "nodes.syscall",
        Quantity(Time),
        Value("\"0s\""),
        "CPU time of one `pread`/`pwrite` on a core, per file-system request a rank issues",
    ),
    key(
        "nodes.read_syscall",
        Quantity(Time),
        Otherwise("`syscall`"),
        "CPU time of one `pread` on a core, where it differs from a write's (a read of cached pages allocates nothing)",
    ),
    key(
        "nodes.fortran_statement",
        Quantity(Time),
        Value("\"0s\""),
        "CPU time of one Fortran unformatted WRITE/READ statement in the Fortran runtime, above its system calls",
    ),
    key(
        "nodes.oversubscribed_wakeup",
        Quantity(Time),
        Value("\"0s\""),
        "extra latency of every message step to a rank on a node running more ranks than cores (MPICH busy-polls)",
    ),
    key(
        "nodes.waiting_ranks",
        Choice(&["idle", "poll"]),
        Value("\"idle\""),
        "on a node running more ranks than cores, what ranks waiting in MPI do: idle (the cores go to ranks with work; every message step costs the wake-up) or poll (MPICH busy-polls: every rank holds cores/ranks of a core at all times; a step costs the wake-up only where its communicator has more ranks on the node than cores, else `polled_wakeup`)",
    ),
    key(
        "nodes.polled_wakeup",
        Quantity(Time),
        Value("\"0s\""),
        "with waiting_ranks = poll, extra latency of a message step among no more of a node's ranks than cores while its other ranks poll",
    ),
    key(
        "nodes.allreduce_wake",
        Quantity(Number),
        Value("1"),
        "the part of a message step's wake-up (`oversubscribed_wakeup`, `polled_wakeup`) each step of an all-reduce of one value waits (MPICH pairs ranks step by step; a pair sharing a time slice does not wait)",
    ),
    key(
        "nodes.release_stagger",
        Quantity(Time),
        Value("\"0s\""),
        "with waiting_ranks = poll, how much earlier the first `cores` of a node's ranks leave a collective whose ranks on the node outnumber its cores than the others (those see the last message only at their next time slice)",
    ),
    key(
        "nodes.sleeping_ranks",
        Choice(&["hold", "yield"]),
        Value("\"hold\""),
        "with waiting_ranks = poll, what a rank sleeping in the kernel (on a file's inode lock, a byte-range lock, the dirty limit, a device) does with its share of the cores: hold (keeps cores/ranks of a core) or yield (the ranks awake share the cores, and a rank woken from a sleep runs on a whole core until its request is done)",
    ),
    key(
        "nodes.wake_slice",
        Quantity(Time),
        Otherwise("until its request is done"),
        "with sleeping_ranks = yield, how long a rank woken from a sleep in the kernel runs on a whole core before it shares the cores with the ranks awake (the scheduler prefers a woken task for one slice)",
    ),
    key(
        "nodes.eager_limit",
        Quantity(Size),
        Otherwise("not modelled"),
        "the largest message MPI sends eagerly: a larger one takes the rendezvous protocol, and a message step of it to a rank of a node running more ranks than cores pays the wake-up twice",
    ),
    key(
        "nodes.mmap_from",
        Quantity(Size),
        Otherwise("not modelled"),
        "MPI's temporary buffers of this size or larger are freshly mapped on every call (glibc's mmap threshold, at most 32 MiB): `MPI_Sendrecv_replace` packs its message into one, at `compute.first_touch`",
    ),
    key(
        "nodes.oversubscribed_unpack_bw",
        Quantity(Rate),
        Otherwise("not modelled"),
        "on a node running more ranks than cores, the rate of messages received into a derived datatype, over the node: the exchange of two-phase collective writes",
    ),
    key(
        "nodes.oversubscribed_pack_bw",
        Quantity(Rate),
        Otherwise("not modelled"),
        "on a node running more ranks than cores, the rate of messages sent from a derived datatype, over the node: the exchange of two-phase collective reads",
    ),
    key(
        "nodes.compute.memcpy",
        Quantity(Rate),
        Required,
        "memory copy per core",
    ),
    key(
        "nodes.compute.fft",
        Quantity(Flops),
        Required,
        "complex 1-D FFTs per core",
    ),
    key(
        "nodes.compute.signal",
        Quantity(Rate),
        Otherwise("`compute.memcpy` / 2"),
        "computing FTIO's closed-form input per core, bytes of output",
    ),
    key(
        "nodes.compute.bt",
        Quantity(Flops),
        Required,
        "NPB BT steps per core",
    ),
    key(
        "nodes.compute.flops",
        Quantity(Flops),
        Required,
        "any other computation per core",
    ),
    key(
        "nodes.compute.fft_all_cores",
        Quantity(Number),
        Value("1"),
        "the part of `fft` a node's ranks keep per core while every core runs ranks (cores that share a physical core's units, caches or memory bus run slower together; fewer ranks than cores: in proportion to the cores beyond the first they take)",
    ),
    key(
        "nodes.compute.signal_all_cores",
        Quantity(Number),
        Value("1"),
        "as `fft_all_cores`, of `signal`",
    ),
    key(
        "nodes.compute.bt_all_cores",
        Quantity(Number),
        Value("1"),
        "as `fft_all_cores`, of `bt`",
    ),
    key(
        "nodes.compute.flops_all_cores",
        Quantity(Number),
        Value("1"),
        "as `fft_all_cores`, of `flops`",
    ),
    key(
        "nodes.compute.error_norm_all_cores",
        Quantity(Number),
        Value("1"),
        "as `fft_all_cores`, of `error_norm`",
    ),
    key(
        "nodes.compute.pattern_all_cores",
        Quantity(Number),
        Value("1"),
        "as `fft_all_cores`, of `pattern` and `pattern_cached` (the fill of IOR's data pattern)",
    ),
    key(
        "nodes.compute.pattern",
        Quantity(Rate),
        Otherwise("free"),
        "filling a benchmark's data pattern per core (IOR does it inside its timed region)",
    ),
    key(
        "nodes.compute.first_touch",
        Quantity(Rate),
        Otherwise("free"),
        "filling freshly mapped memory per core: page faults, zeroing and the unmap",
    ),
    key(
        "nodes.compute.pattern_check",
        Quantity(Rate),
        Otherwise("`pattern`"),
        "checking data read against its pattern per core",
    ),
    key(
        "nodes.compute.private_cache",
        Quantity(Size),
        Otherwise("not modelled"),
        "the cache private to a core: a buffer this small stays in it, so its pattern is filled and checked at the `_cached` rates",
    ),
    key(
        "nodes.compute.pattern_cached",
        Quantity(Rate),
        Otherwise("`pattern`"),
        "`pattern` for a buffer of at most `private_cache` bytes",
    ),
    key(
        "nodes.compute.pattern_check_cached",
        Quantity(Rate),
        Otherwise("`pattern_check`"),
        "`pattern_check` for a buffer of at most `private_cache` bytes",
    ),
    key(
        "nodes.compute.error_norm",
        Quantity(Rate),
        Otherwise("charged as `pattern_check`"),
        "BTIO's verification per core: NPB's error norm of a dump read back against BT's exact solution (a polynomial per point), bytes of the dump",
    ),
    key(
        "nodes.cache.capacity",
        Quantity(Size),
        Otherwise("`nodes.memory`"),
        "bytes the cache may hold",
    ),
    key(
        "nodes.cache.dirty_ratio",
        Fraction,
        Value("0.2"),
        "dirty share of the capacity at which writers wait",
    ),
    key(
        "nodes.cache.dirty_background_ratio",
        Fraction,
        Value("0.1"),
        "dirty share at which the flusher writes back (≤ `dirty_ratio`)",
    ),
    key(
        "nodes.cache.write_bw",
        Quantity(Rate),
        Otherwise("`nodes.compute.memcpy`"),
        "per-core rate of copying into the cache (allocating pages: slower than a memcpy)",
    ),
    key(
        "nodes.cache.rewrite_bw",
        Quantity(Rate),
        Otherwise("`write_bw`"),
        "per-core rate of copying written data into pages the cache already holds (no allocation)",
    ),
    key(
        "nodes.cache.read_bw",
        Quantity(Rate),
        Otherwise("`nodes.compute.memcpy`"),
        "per-core rate of copying out of the cache",
    ),
    key(
        "nodes.cache.aliased_bw",
        Quantity(Rate),
        Otherwise("not modelled"),
        "per-core rate of a page-cache copy, either way, whose destination lies 1 to `aliased_within` − 1 bytes past its source modulo 4 KiB (4K aliasing: a read at a page-aligned file offset into a buffer 16 bytes past a page, as glibc's `malloc` places a large block); the buffer's place is the benchmark's, ROMIO's own buffers are not modelled",
    ),
    key(
        "nodes.cache.aliased_within",
        Quantity(Size),
        Value("\"32B\""),
        "how far past its source a copy's destination may lie, modulo 4 KiB, and alias (`aliased_bw`)",
    ),
    key(
        "nodes.cache.aliased_all_cores",
        Quantity(Number),
        Otherwise("all of it"),
        "the part of `aliased_bw` each core keeps while every core of the node copies aliased: the node's aliased copies together run at most at `cores` × this × `aliased_bw` (a resource of the node, shared as the copies run)",
    ),
    key(
        "nodes.cache.fresh_bw",
        Quantity(Rate),
        Otherwise("no cost"),
        "per node: growing into memory the cache has not backed yet (beyond `warm` and what it held before) costs bytes / this",
    ),
    key(
        "nodes.cache.warm",
        Quantity(Size),
        Otherwise("`capacity`"),
        "memory the cache has backed at the start",
    ),
    key(
        "nodes.cache.release_time",
        Quantity(Time),
        Otherwise("for ever"),
        "time over which freed cache memory beyond `warm` is handed back to the host, linearly (free page reporting); growth into it again costs `fresh_bw`",
    ),
    key(
        "nodes.cache.free",
        Quantity(Size),
        Otherwise("unlimited"),
        "free memory not backed at the start (`MemFree`): growth into it costs `fresh_bw`; beyond it the kernel reclaims backed cache pages, at no extra cost",
    ),
    key(
        "nodes.cache.readahead",
        Quantity(Size),
        Value("\"128KiB\""),
        "largest read-ahead window (Linux's on-demand read-ahead; `\"0B\"`: none)",
    ),
    key(
        "nodes.cache.direct_from",
        Quantity(Size),
        Otherwise("none"),
        "requests of this size or larger bypass the cache: direct I/O to the servers (NEC SFS caches only requests below 1 MB)",
    ),
    key(
        "nodes.cache.huge_from",
        Quantity(Size),
        Otherwise("not modelled"),
        "write requests of this size or larger are cached in huge pages (Linux's large folios), which only the free blocks free page reporting hands back hold: they take recently freed memory, then fresh memory (`fresh_bw`), never the `warm` floor",
    ),
    key(
        "nodes.cache.fresh_stall",
        Choice(&["none", "core"]),
        Value("\"none\""),
        "what growth into fresh memory holds besides the node's `fresh_bw`: none, or the writer's core too (a guest's vCPU waits in the hypervisor while the host backs the page, so a writer sharing its core backs memory only in its share of the core's time)",
    ),
    // [network]
    key(
        "network.bandwidth",
        Quantity(Rate),
        Required,
        "every switch's backplane bandwidth",
    ),
    key(
        "network.latency",
        Quantity(Time),
        Required,
        "latency per hop",
    ),
    key(
        "network.links",
        Tables,
        Otherwise("none"),
        "full-duplex links between switches; routes are shortest paths by latency",
    ),
    key("network.links.from", Text, Required, "one switch"),
    key("network.links.to", Text, Required, "the other switch"),
    key(
        "network.links.bandwidth",
        Quantity(Rate),
        Required,
        "bandwidth per direction",
    ),
    key("network.links.latency", Quantity(Time), Required, "latency"),
    key(
        "network.torus",
        Table,
        Otherwise("none"),
        "a 3-D torus of routers `torus(x,y,z)`, dimension-order routed; `switch = \"torus\"` spreads a node group (or the servers) over it",
    ),
    key(
        "network.torus.x",
        Integer,
        Required,
        "routers along x (1 or more; 2 joins them by one link, 3 or more close a ring)",
    ),
    key("network.torus.y", Integer, Value("1"), "routers along y"),
    key("network.torus.z", Integer, Value("1"), "routers along z"),
    key(
        "network.torus.bandwidth",
        Quantity(Rate),
        Required,
        "bandwidth of each torus link per direction",
    ),
    key(
        "network.torus.latency",
        Quantity(Time),
        Required,
        "latency of each torus link (a hop also crosses a router: `network.latency`)",
    ),
    // [server]
    key(
        "server.count",
        Integer,
        Value("1"),
        "I/O servers (more than one needs a parallel file system)",
    ),
    key(
        "server.nic_bw",
        Quantity(Rate),
        Required,
        "NIC bandwidth per direction",
    ),
    key(
        "server.switch",
        Text,
        Value("\"core\""),
        "the switch the servers attach to (`\"torus\"`: spread evenly over the routers of `network.torus`)",
    ),
    key(
        "server.request_cpu",
        Quantity(Time),
        Value("\"0s\""),
        "CPU per request, first come first served",
    ),
    key(
        "server.cache",
        Table,
        Otherwise("no server cache"),
        "the server cache (LRU read cache)",
    ),
    key("server.device", Table, Required, "each server's device"),
    key(
        "server.cache.capacity",
        Quantity(Size),
        Required,
        "bytes it may hold",
    ),
    key(
        "server.cache.bandwidth",
        Quantity(Rate),
        Required,
        "its copy rate",
    ),
    key(
        "server.cache.policy",
        Choice(&["write-back", "write-through"]),
        Value("\"write-back\""),
        "write-back (dirty up to `dirty_ratio`) or write-through",
    ),
    key(
        "server.cache.dirty_ratio",
        Fraction,
        Value("0.5"),
        "dirty share of the capacity",
    ),
    // [filesystem]
    key(
        "filesystem.kind",
        Choice(&["local", "nfs", "parallel"]),
        Value("\"local\""),
        "local, NFS-like (one server; close-to-open: flush at close, stale pages dropped at open) or parallel (striped over the servers, Lustre-style)",
    ),
    key(
        "filesystem.stripe_size",
        Quantity(Size),
        Value("\"1MiB\""),
        "stripe size (parallel)",
    ),
    key(
        "filesystem.stripe_count",
        Integer,
        Value("1"),
        "servers a file is striped over (≤ `server.count`)",
    ),
    key(
        "filesystem.lock_granularity",
        Quantity(Size),
        Otherwise("no extent locks"),
        "extent-lock unit (Lustre LDLM, GPFS byte-range tokens)",
    ),
    key(
        "filesystem.lock_revoke",
        Quantity(Time),
        Value("\"0s\""),
        "revoking a lock another client holds (callback round trip)",
    ),
    key(
        "filesystem.write_lock",
        Choice(&["none", "inode"]),
        Value("\"none\""),
        "inode: a node's buffered writes to one file copy into the page cache one at a time, fresh pages included (ext4, XFS and the NFS client hold the inode lock for a whole buffered write); none: in parallel (Lustre's client locks ranges)",
    ),
    key(
        "filesystem.write_lock_span",
        Choice(&["copy", "call"]),
        Value("\"copy\""),
        "with write_lock = inode, what the lock covers: the write's copy into the page cache (copy) or its whole system call, `nodes.syscall` included (call)",
    ),
    // [metadata]
    key(
        "metadata.open",
        Quantity(Time),
        Required,
        "open an existing file",
    ),
    key("metadata.create", Quantity(Time), Required, "create a file"),
    key("metadata.close", Quantity(Time), Required, "close"),
    key("metadata.delete", Quantity(Time), Required, "delete"),
    key(
        "metadata.delete_bw",
        Quantity(Rate),
        Otherwise("free"),
        "a deletion also costs the file's size over this (dropping cached pages, freeing extents)",
    ),
    key(
        "metadata.sync",
        Quantity(Time),
        Required,
        "the commit after a sync's data is flushed",
    ),
    // [mpiio]
    key(
        "mpiio.shared_pointer",
        Quantity(Time),
        Required,
        "one shared-file-pointer update (ROMIO's locked hidden file)",
    ),
    key(
        "mpiio.independent_call",
        Quantity(Time),
        Value("\"0s\""),
        "CPU per independent MPI-IO data call on the calling rank, above its system calls",
    ),
    key(
        "mpiio.collective_call",
        Quantity(Time),
        Value("\"0s\""),
        "CPU per collective MPI-IO data call, on top of its modelled messages",
    ),
    key(
        "mpiio.open",
        Quantity(Time),
        Value("\"0s\""),
        "CPU of `MPI_File_open` per rank, beyond the metadata costs",
    ),
    key(
        "mpiio.close",
        Quantity(Time),
        Value("\"0s\""),
        "CPU of `MPI_File_close` per rank, beyond the metadata costs",
    ),
    key(
        "mpiio.first_open",
        Quantity(Time),
        Value("\"0s\""),
        "CPU a process's first `MPI_File_open` takes beyond `open` (the library's set-up on first use)",
    ),
    key(
        "mpiio.first_close",
        Quantity(Time),
        Value("\"0s\""),
        "CPU a process's first `MPI_File_close` takes beyond `close`",
    ),
    key(
        "mpiio.open_steps",
        Quantity(Number),
        Value("0"),
        "message steps of a collective MPI_File_open beyond its one synchronisation (communicator duplicate, access-mode and error agreement, host names for cb_config_list), each a message step of the communicator (with the wake-up on an oversubscribed node)",
    ),
    key(
        "mpiio.offsets_steps",
        Quantity(Number),
        Otherwise(
            "the generic cost: ceil(log2 N) steps, and a closing barrier on every collective data call",
        ),
        "message steps of the exchange of every rank's start and end offsets opening each collective data call (ROMIO's two all-gathers), each a message step of the communicator (with the wake-up on an oversubscribed node); given, calls synchronise as ROMIO's: one whose ranks do not interleave (independent I/O) and a two-phase read end with the rank's own part, a two-phase write with a collective of the error codes",
    ),
];

/// The keys of a device table (`server.device`, and a RAID's `member`, which
/// is an SSD or an HDD), their paths relative to it.
const DEVICE: &[Key] = &[
    dev(
        "kind",
        &[],
        Choice(&["ssd", "hdd", "raid"]),
        Value("\"ssd\""),
        "SSD, HDD (Ruemmler & Wilkes 1994) or RAID (Chen et al. 1994; a member: SSD or HDD)",
    ),
    dev("read_bw", SSD, Quantity(Rate), Required, "read bandwidth"),
    dev("write_bw", SSD, Quantity(Rate), Required, "write bandwidth"),
    dev(
        "overwrite_bw",
        SSD,
        Quantity(Rate),
        Otherwise("`write_bw`"),
        "write bandwidth for blocks the file wrote to the device before (overwrites in place; `write_bw` is then that of new blocks, which the file system allocates on write-back); a server's own SSD, not a RAID member",
    ),
    dev(
        "read_latency",
        SSD,
        Quantity(Time),
        Required,
        "per-request read latency",
    ),
    dev(
        "write_latency",
        SSD,
        Quantity(Time),
        Required,
        "per-request write latency",
    ),
    dev(
        "latency_jitter",
        SSD,
        Fraction,
        Value("0.0"),
        "relative spread of the latencies (drawn from the run's seed)",
    ),
    dev(
        "channels",
        SSD,
        Integer,
        Value("1"),
        "requests served at once",
    ),
    dev("capacity", HDD, Quantity(Size), Required, "capacity"),
    dev(
        "rpm",
        HDD,
        Integer,
        Required,
        "rotation speed; half a revolution is paid per positioning",
    ),
    dev(
        "seek_track",
        HDD,
        Quantity(Time),
        Required,
        "track-to-track seek (seek grows with √distance)",
    ),
    dev(
        "seek_full",
        HDD,
        Quantity(Time),
        Required,
        "full-stroke seek (≥ `seek_track`)",
    ),
    dev(
        "transfer_rate",
        HDD,
        Quantity(Rate),
        Required,
        "outer-zone media rate",
    ),
    dev(
        "transfer_rate_inner",
        HDD,
        Quantity(Rate),
        Otherwise("`transfer_rate`"),
        "inner-zone media rate (≤ `transfer_rate`)",
    ),
    dev(
        "queue",
        HDD,
        Choice(&["fifo", "elevator"]),
        Value("\"fifo\""),
        "request order",
    ),
    dev(
        "level",
        RAID,
        Choice(&["0", "3", "5", "6"]),
        Required,
        "RAID level (3: a dedicated parity disk, spindles in step; 3, 5 and 6: partial-stripe writes read-modify-write)",
    ),
    dev(
        "disks",
        RAID,
        Integer,
        Required,
        "member disks (at least 1, 3, 3 or 4 for levels 0, 3, 5, 6)",
    ),
    dev(
        "stripe_unit",
        RAID,
        Quantity(Size),
        Required,
        "stripe unit per disk (level 3: the interleave, a sector or a few)",
    ),
    dev(
        "member",
        RAID,
        Table,
        Required,
        "the member device: a table of the keys above, kind `ssd` or `hdd`",
    ),
];

/// Every key, devices expanded under `server.device` and its `member`, in the
/// order the reader lists them.
pub fn keys() -> &'static [Key] {
    static ALL: std::sync::LazyLock<Vec<Key>> = std::sync::LazyLock::new(|| {
        let mut out: Vec<Key> = KEYS.to_vec();
        for (prefix, nested) in [("server.device", false), ("server.device.member", true)] {
            for d in DEVICE {
                if nested && (d.devices == RAID) {
                    continue;
                }
                let mut k = *d;
                // built once per process: the expanded paths live as long as it
                k.path = Box::leak(format!("{prefix}.{}", d.path).into_boxed_str());
                if nested && d.path == "kind" {
                    k.holds = Choice(&["ssd", "hdd"]);
                }
                out.push(k);
            }
        }
        out
    });
    &ALL
}

/// `path` with list indices removed (`nodes[0].cache` → `nodes.cache`).
pub fn plain(path: &str) -> String {
    path.split('.')
        .map(|seg| seg.split_once('[').map_or(seg, |(name, _)| name))
        .collect::<Vec<_>>()
        .join(".")
}

/// The keys allowed directly in the table at `table` (a plain path; `""` the
/// top level), for a device of kind `device` where it is one.
pub fn children(table: &str, device: Option<&str>) -> Vec<&'static str> {
    let prefix = if table.is_empty() {
        String::new()
    } else {
        format!("{table}.")
    };
    keys()
        .iter()
        .filter(|k| {
            k.path
                .strip_prefix(&prefix)
                .is_some_and(|rest| !rest.contains('.'))
        })
        .filter(|k| match device {
            Some(d) => k.devices.is_empty() || k.devices.contains(&d),
            None => true,
        })
        .map(|k| &k.path[prefix.len()..])
        .collect()
}

/// The key at plain `path`, if the schema has one.
pub fn find(path: &str) -> Option<Key> {
    keys().iter().find(|k| k.path == path).copied()
}

/// What a `[calibration]` entry for plain `path` holds: the numeric keys.
pub fn calibratable(path: &str) -> Option<KeyKind> {
    match find(path)?.holds {
        Quantity(kind) => Some(kind),
        Integer | Fraction => Some(Number),
        _ => None,
    }
}

/// The schema as a Markdown table: key (with its table), what it holds, its
/// default, what it is.
pub fn markdown() -> String {
    let mut out = String::from("| key | holds | default | meaning |\n|---|---|---|---|\n");
    for k in keys() {
        let holds = match k.holds {
            Quantity(Size) => "size".to_string(),
            Quantity(Rate) => "rate".to_string(),
            Quantity(Time) => "time".to_string(),
            Quantity(Flops) => "flop rate".to_string(),
            Quantity(Number) | Integer => "number".to_string(),
            Fraction => "fraction".to_string(),
            Choice(c) => c.join(" \\| "),
            Text => "string".to_string(),
            Table => "table".to_string(),
            Tables => "list of tables".to_string(),
            Free => "table of free keys".to_string(),
        };
        let default = match k.default {
            Required => "required".to_string(),
            Value(v) => format!("`{v}`"),
            Otherwise(t) => t.to_string(),
        };
        let devices = match k.devices {
            [] => String::new(),
            d => format!(" ({} only)", d.join(", ")),
        };
        out.push_str(&format!(
            "| `{}` | {holds} | {default} | {}{devices} |\n",
            k.path, k.doc
        ));
    }
    out
}
