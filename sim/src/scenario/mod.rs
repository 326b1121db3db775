//! Scenarios: one storage system described completely in TOML — compute nodes,
//! network, file server and device, metadata costs, MPI-IO costs — with units on
//! every quantity and a `[source]` table saying where the numbers came from.
//!
//! Loading is strict: unknown keys, missing units, impossible values and missing
//! keys are errors that name the file, the line, the key path, the value as
//! written and what is allowed (see [`ScenarioError`]). The document is read from
//! `toml`'s spanned tree ([`toml::de::DeTable`]) so every error has its line.
//!
//! ```toml
//! name = "example"
//! seed = 1
//! [source]
//! general = "datasheet numbers"
//! [[nodes]]
//! name = "compute"
//! count = 4
//! cores = 8
//! memory = "64GiB"
//! nic_bw = "10Gb/s"
//! nic_latency = "2us"
//! [nodes.compute]
//! memcpy = "5GB/s"
//! fft = "2Gflop/s"
//! bt = "1Gflop/s"
//! flops = "2Gflop/s"
//! [network]
//! bandwidth = "40GB/s"
//! latency = "1us"
//! [server]
//! nic_bw = "10Gb/s"
//! [server.device]
//! read_bw = "500MB/s"
//! write_bw = "400MB/s"
//! read_latency = "80us"
//! write_latency = "30us"
//! [metadata]
//! open = "50us"
//! create = "200us"
//! close = "20us"
//! delete = "150us"
//! sync = "1ms"
//! [mpiio]
//! shared_pointer = "100us"
//! independent_call = "5us"    # optional CPU costs per call (default 0)
//! [calibration."mpiio.independent_call"]
//! value = "5us"
//! low = "4.8us"
//! high = "5.2us"
//! probe = "ior mpiio independent, 1 KiB-1 MiB transfers, 1-2 ranks"
//! quality = "r2=0.998 n=24"
//! ```
//!
//! Optional keys that are off by default model the client's CPU (see
//! `scenarios/README.md`): `[[nodes]] syscall`, `oversubscribed_wakeup`,
//! `[nodes.cache] write_bw`, `read_bw`, `[mpiio] independent_call`,
//! `collective_call`, `open`, `close`. The `[calibration]` table records what
//! `piotwin calibrate` fitted ([`Calibrated`]); its key paths are checked
//! against the schema.

use std::collections::BTreeMap;
use std::fmt;

mod display;
mod read;
pub mod schema;
mod table;

/// An error in a scenario file: where, which key, which value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file (as given to [`Scenario::load`] or [`Scenario::from_str`]).
    pub file: String,
    /// 1-based line of the offending key or value, where known.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `server.device.write_bw`, where one applies.
    pub key: Option<String>,
    /// The value as written in the file, where one applies.
    pub value: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ":")?;
        if let Some(k) = &self.key {
            write!(f, " {k}")?;
            if let Some(v) = &self.value {
                write!(f, " = {v}")?;
            }
            write!(f, ":")?;
        }
        write!(f, " {}", self.message)
    }
}

/// A group of identical compute nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    /// Name of the group (for reports).
    pub name: String,
    /// Number of nodes in the group.
    pub count: usize,
    /// Cores per node: ranks beyond `count·cores` oversubscribe the cores.
    pub cores: usize,
    /// Main memory per node in bytes (the default page-cache capacity).
    pub memory: u64,
    /// NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// The node's memory bus in bytes/s: intra-node messages and page-cache
    /// copies of all its ranks share it, each copy at most one core's
    /// `compute.memcpy` (default: `compute.memcpy`, one copy fills the bus).
    pub memory_bw: f64,
    /// The bus's rate for copies out of the page cache into buffers within
    /// `compute.private_cache`, bytes/s (default `memory_bw`): a write into the
    /// cache moves each byte over the bus more than once (the new line read for
    /// ownership, then written back), while a read into a buffer the private
    /// cache holds reads it once; those reads take the bus at `memory_bw` /
    /// this per byte (larger buffers are written back as a write's lines).
    pub memory_read_bw: f64,
    /// The rate, over the whole node, at which writes into new page-cache
    /// pages move, bytes/s (default `memory_bw`): besides the bus they share
    /// the kernel's allocation of the pages (the zone's free lists, the LRU),
    /// so writers of a new file each on every core at once may keep less of
    /// a core than rewriters of cached pages do. Such writes take the bus at
    /// `memory_bw` / this per byte.
    pub memory_write_bw: f64,
    /// Per-core rate of an intra-node message, bytes/s (`message_bw`; default
    /// `compute.memcpy`): MPI's shared-memory transport copies a message
    /// through buffers both processes map, in pieces each side hands over, so
    /// it runs below one plain copy.
    pub message_bw: f64,
    /// NIC latency per message in seconds.
    pub nic_latency: f64,
    /// The switch the nodes' NICs attach to (a name from `[network]`).
    pub switch: String,
    /// Per-core compute rates.
    pub compute: ComputeRates,
    /// The client page cache, if the file system's clients cache (absent = none).
    pub cache: Option<ClientCache>,
    /// CPU time of one POSIX read or write system call on a core, in seconds
    /// (kernel entry and exit, VFS and file-system bookkeeping): charged per
    /// file-system request a rank issues, whether a POSIX call or one ROMIO
    /// makes for it. 0 = free (the default).
    pub syscall: f64,
    /// CPU time of one read system call, where it differs from `syscall`
    /// (`nodes.read_syscall`): a write allocates and dirties pages under the
    /// inode's lock, a read of cached pages only copies them out. Default:
    /// `syscall`.
    pub read_syscall: f64,
    /// CPU time of one Fortran data-transfer statement (`WRITE`/`READ` of an
    /// unformatted unit) in the Fortran runtime above its system calls (unit lock,
    /// statement set-up, record positioning, the I/O list into the unit's buffer),
    /// in seconds: charged per statement of a Fortran unit. 0 = free (the default).
    pub fortran_statement: f64,
    /// Extra latency, in seconds, of a message or synchronisation step that
    /// reaches a rank on an oversubscribed node (more ranks than `cores`):
    /// MPICH busy-polls, so a descheduled receiver answers only at its next
    /// time slice. 0 = none (the default).
    pub oversubscribed_wakeup: f64,
    /// What ranks waiting in MPI do on an oversubscribed node (`waiting_ranks`).
    pub waiting_ranks: WaitingRanks,
    /// With `waiting_ranks = poll`: the extra latency, in seconds, of a message
    /// step among no more of the node's ranks than cores while its other ranks
    /// poll (the ranks of the step are not always scheduled together). 0 = none
    /// (the default).
    pub polled_wakeup: f64,
    /// The part of a message step's wake-up (`oversubscribed_wakeup`,
    /// `polled_wakeup`) each step of an all-reduce of one value waits
    /// (`allreduce_wake`; absent = 1, as any collective's step): MPICH's
    /// all-reduce pairs ranks step by step, and a pair that shares a time
    /// slice does not wait for the others.
    pub allreduce_wake: f64,
    /// With `waiting_ranks = poll`: how much earlier, in seconds, the first
    /// `cores` of a node's ranks leave a collective whose ranks on the node
    /// outnumber its cores than the others do. The last message reaches the
    /// ranks on a core at once and the others at their next time slice, so
    /// a phase timed from the first rank out to the last rank done is that
    /// much longer than its work. 0 = none (the default: all leave together).
    pub release_stagger: f64,
    /// With `waiting_ranks = poll`: what a rank sleeping in the kernel (waiting
    /// for a file's inode lock, a byte-range lock, the dirty limit or a device)
    /// does with its share of the cores (`sleeping_ranks`).
    pub sleeping_ranks: SleepingRanks,
    /// With `sleeping_ranks = yield`: how long, in seconds, a rank woken from
    /// a sleep in the kernel runs on a whole core before it shares the cores
    /// with the ranks awake (the scheduler's preference for a woken task
    /// lasts one slice). Infinite = until its request is done (the default).
    pub wake_slice: f64,
    /// The largest message, in bytes, MPI sends eagerly; a larger one takes the
    /// rendezvous protocol (request to send, clear to send, then the data), so
    /// a step of it to a rank of an oversubscribed node waits for that node's
    /// wake-up twice: b_eff's `MPI_Sendrecv` exchanges at 4 ranks on 2 cores
    /// took 8 ms up to 8 KiB and 16 ms from 9.5 KiB. `u64::MAX` = not
    /// modelled (the default): every message one wake-up.
    pub eager_limit: u64,
    /// On an oversubscribed node, the rate in bytes/s at which messages received
    /// into a derived datatype move, over the whole node: two-phase collective
    /// writes' exchange, where each aggregator receives the ranks' interleaved
    /// pieces into its collective buffer. MPICH's shared-memory path unpacks such
    /// messages cell by cell, a hand-off per cell, and with more ranks than cores
    /// each hand-off waits for the other rank's time slice. Infinite = not
    /// modelled (the default): the exchange moves as any intra-node message.
    pub oversubscribed_unpack_bw: f64,
    /// As `oversubscribed_unpack_bw`, for messages sent from a derived datatype
    /// (two-phase collective reads' exchange, the aggregators sending the pieces
    /// of their collective buffer).
    pub oversubscribed_pack_bw: f64,
    /// MPI's temporary buffers of this many bytes or more are freshly mapped
    /// on every call: glibc's `malloc` serves a request above its mmap
    /// threshold, which grows with the chunks freed up to 32 MiB, by `mmap`,
    /// and `free` unmaps it, so each call faults its pages in again
    /// (`MPI_Sendrecv_replace` packs the message into such a buffer). The
    /// rank fills one at `compute.first_touch`. `u64::MAX` = not modelled
    /// (the default).
    pub mmap_from: u64,
}

/// What a rank waiting in MPI (for a message, in a collective) does on a node
/// running more ranks than cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitingRanks {
    /// It leaves the cores to the ranks with work (`idle`, the default); every
    /// message step to a rank of the node costs `oversubscribed_wakeup`.
    Idle,
    /// It busy-polls (`poll`, MPICH's progress engine): every rank of the node
    /// is always runnable, so each holds cores / ranks of a core, whether it
    /// works or waits; a message step costs `oversubscribed_wakeup` only where
    /// its communicator has more ranks on the node than cores, else
    /// `polled_wakeup` (see `crate::platform`).
    Poll,
}

/// With `waiting_ranks = poll`, what a rank sleeping in the kernel does with
/// its share of the node's cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepingRanks {
    /// It keeps it (`hold`, the default): every rank holds cores / ranks of a
    /// core at all times.
    Hold,
    /// It leaves it to the runnable ranks (`yield`): a sleeping task is not
    /// runnable, so the node's ranks awake share its cores; a rank woken from
    /// a sleep runs on a whole core until its request is done (or for
    /// `wake_slice`), the others share the rest (see `crate::platform`).
    Yield,
}

/// Per-core compute rates, one per kernel kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeRates {
    /// Memory copy bandwidth in bytes/s (also intra-node message bandwidth and page-cache copies).
    pub memcpy: f64,
    /// Complex FFT rate in flop/s.
    pub fft: f64,
    /// Computing FTIO's closed-form input, bytes/s of output (`signal`;
    /// absent = `memcpy` / 2, a read and a write of each byte).
    pub signal: f64,
    /// NPB BT solver rate in flop/s.
    pub bt: f64,
    /// Any other kernel, in flop/s.
    pub flops: f64,
    /// Generating a benchmark's data pattern, bytes/s (`pattern`; absent =
    /// infinite: the pattern costs nothing, as in datasheet scenarios).
    pub pattern: f64,
    /// Checking data read against its pattern, bytes/s (`pattern_check`;
    /// absent = `pattern`).
    pub pattern_check: f64,
    /// The cache private to a core, bytes (`private_cache`; absent = 0, not
    /// modelled): a buffer this small, just read or written, stays in it, so
    /// filling or checking its pattern runs at the `_cached` rates (IOR checks
    /// each transfer right after reading it).
    pub private_cache: u64,
    /// `pattern` for a buffer of at most `private_cache` bytes (`pattern_cached`;
    /// absent = `pattern`).
    pub pattern_cached: f64,
    /// `pattern_check` for a buffer of at most `private_cache` bytes
    /// (`pattern_check_cached`; absent = `pattern_check`).
    pub pattern_check_cached: f64,
    /// BTIO's error norm of a dump read back against BT's exact solution,
    /// bytes of the dump per second (`error_norm`; absent = charged as a
    /// pattern check).
    pub error_norm: Option<f64>,
    /// Filling freshly mapped memory, bytes/s (`first_touch`; absent =
    /// infinite): each page's first write faults, and the kernel zeroes a
    /// page before the copy lands in it; unmapping is included.
    pub first_touch: f64,
    /// What the kernels keep of their rates while every core runs ranks.
    pub all_cores: AllCores,
}

impl ComputeRates {
    /// Whether a buffer of `bytes` bytes stays in the core's private cache, so
    /// that filling or checking its pattern runs at the `_cached` rates.
    pub fn in_private_cache(&self, bytes: f64) -> bool {
        self.private_cache > 0 && bytes <= self.private_cache as f64
    }

    /// The rate of filling the data pattern of a buffer of `bytes` bytes.
    pub fn pattern_fill_rate(&self, bytes: f64) -> f64 {
        match self.in_private_cache(bytes) {
            true => self.pattern_cached,
            false => self.pattern,
        }
    }
}

/// The part of a kernel's per-core rate a node's ranks keep while every core
/// of the node runs ranks (`<kernel>_all_cores`; absent = 1): cores that share
/// a physical core's units (SMT siblings), its caches or the memory bus run
/// slower together, and ranks time-sharing a core refill its caches. With
/// fewer ranks than cores the loss is in proportion to the cores beyond the
/// first they take (see `crate::platform`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllCores {
    /// Of `fft`.
    pub fft: f64,
    /// Of `signal`.
    pub signal: f64,
    /// Of `bt`.
    pub bt: f64,
    /// Of `flops`.
    pub flops: f64,
    /// Of `error_norm`.
    pub error_norm: f64,
    /// Of `pattern` and `pattern_cached` (filling IOR's data pattern).
    pub pattern: f64,
}

/// A client node's page cache, modelled on Linux's write-back (`vm.dirty_ratio`,
/// `vm.dirty_background_ratio`; Documentation/admin-guide/sysctl/vm.rst).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCache {
    /// Bytes of file data the node can cache (clean + dirty).
    pub capacity: u64,
    /// Fraction of `capacity` that may be dirty before writers are throttled (Linux default 0.2).
    pub dirty_ratio: f64,
    /// Fraction of `capacity` dirty at which background write-back starts (Linux default 0.1).
    pub dirty_background_ratio: f64,
    /// Per-core rate of copying written data into the page cache, in bytes/s
    /// (page allocation, zeroing and accounting make it slower than a memcpy);
    /// defaults to `compute.memcpy`.
    pub write_bw: f64,
    /// Per-core rate of copying written data into pages the cache already
    /// holds, in bytes/s (a rewrite allocates nothing: IOzone's rewrite runs
    /// well above its write); defaults to `write_bw`.
    pub rewrite_bw: f64,
    /// Per-core rate of copying cached data out of the page cache, in bytes/s;
    /// defaults to `compute.memcpy`.
    pub read_bw: f64,
    /// Per-core rate, bytes/s, of a page-cache copy (either way) whose
    /// destination lies 1 to `aliased_within − 1` bytes past its source modulo
    /// 4 KiB (`aliased_bw`; absent = infinite: not modelled): the CPU's copy
    /// takes the stores for loads of the same place (4K aliasing). A read at
    /// a page-aligned file offset into a buffer 16 bytes past a page (glibc's
    /// `malloc` of a large block) is one.
    pub aliased_bw: f64,
    /// Bytes past the source within which a copy's destination aliases (`aliased_within`).
    pub aliased_within: u64,
    /// Part of `aliased_bw` each core keeps while every core of the node
    /// copies aliased (`aliased_all_cores`; absent = all of it): the node's
    /// aliased copies together run at most at cores × this × `aliased_bw`.
    pub aliased_all_cores: Option<f64>,
    /// Rate at which the page cache takes memory the node has not backed yet,
    /// bytes/s per node (`fresh_bw`; absent = infinite): a VM whose hypervisor
    /// took back free memory faults it in again, a full host reclaims first.
    pub fresh_bw: f64,
    /// Memory the page cache can take without fresh memory, bytes (`warm`;
    /// default `capacity`): freed cache pages stay backed and are reused at
    /// the normal rate.
    pub warm: u64,
    /// Time over which freed cache memory is handed back, seconds
    /// (`release_time`; absent = never): a guest with free page reporting
    /// returns freed memory to its hypervisor within seconds, so memory the
    /// cache held beyond `warm` and gave up is warm again only while recent —
    /// each freed amount is handed back linearly over this time.
    pub release_time: f64,
    /// Free memory the node has not backed at the start, bytes (`free`;
    /// absent = unlimited): the cache grows into it at `fresh_bw`; once it is
    /// used up the kernel reclaims other cached pages, whose memory is backed,
    /// so further growth costs nothing extra (Linux's `MemFree`, less what is
    /// recently freed).
    pub free: f64,
    /// Largest read-ahead window in bytes (`readahead`; 0 = none; default
    /// 128 KiB, Linux's `read_ahead_kb`): a rank reading a file sequentially
    /// that misses the cache fetches a window beyond its request, growing as
    /// Linux's on-demand read-ahead grows it (`mm/readahead.c`).
    pub readahead: u64,
    /// Requests of this many bytes or more bypass the cache (`direct_from`;
    /// `u64::MAX` = none): direct I/O to the servers, as NEC's SFS sends
    /// requests of 1 MB and more past its file-system cache.
    pub direct_from: u64,
    /// Write requests of this many bytes or more are cached in huge pages
    /// (`huge_from`; `u64::MAX` = not modelled): Linux gives a large write
    /// large folios, up to 2 MiB, which only free blocks of that size hold,
    /// and those are the blocks free page reporting hands back. Such a write
    /// takes memory freed recently, then fresh memory; the `warm` floor (free
    /// memory in smaller blocks, never handed back) serves smaller requests only.
    pub huge_from: u64,
    /// Whether growth into fresh memory also holds the writer's core
    /// (`fresh_stall = "core"`; default `"none"`): a guest's vCPU waits in
    /// the hypervisor while the host backs the page it touched, so where the
    /// core is shared the writer backs memory only in its share of the core's
    /// time, as it copies.
    pub fresh_holds_core: bool,
}

/// The interconnect: switches (each with a backplane bandwidth) joined by links;
/// routes are shortest paths by latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Backplane bandwidth of every switch in bytes/s, shared by all flows crossing it.
    pub bandwidth: f64,
    /// One-way latency through a switch in seconds.
    pub latency: f64,
    /// Links between switches (none: one switch, `core`).
    pub links: Vec<Link>,
    /// A torus of routers, if the machine has one.
    pub torus: Option<Torus>,
}

/// A 3-D torus of routers named `torus(x,y,z)`, each joined to its neighbours
/// along x, y and z (wrapping around), routed in dimension order.
#[derive(Debug, Clone, PartialEq)]
pub struct Torus {
    /// Routers along x, y and z (1: that dimension is absent).
    pub dims: [usize; 3],
    /// Bandwidth of each link per direction in bytes/s.
    pub bandwidth: f64,
    /// One-way latency of each link in seconds.
    pub latency: f64,
}

impl Torus {
    /// The switch name that spreads a node group or the servers over the routers.
    pub const ATTACH: &'static str = "torus";

    /// Number of routers.
    pub fn routers(&self) -> usize {
        self.dims.iter().product()
    }

    /// The name of the router at `(x, y, z)`.
    pub fn router_name(c: [usize; 3]) -> String {
        format!("torus({},{},{})", c[0], c[1], c[2])
    }

    /// Router `i`'s coordinates (x fastest).
    pub fn coords(&self, i: usize) -> [usize; 3] {
        let [x, y, _] = self.dims;
        [i % x, i / x % y, i / (x * y)]
    }

    /// The router of the `k`th of `count` members spread over the torus
    /// (evenly, in router order: member `k` at router `k · routers / count`).
    pub fn spread(&self, k: usize, count: usize) -> usize {
        k * self.routers() / count
    }
}

/// A full-duplex link between two switches.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// One end (a switch name).
    pub from: String,
    /// The other end.
    pub to: String,
    /// Bandwidth per direction in bytes/s.
    pub bandwidth: f64,
    /// One-way latency in seconds.
    pub latency: f64,
}

/// The I/O servers (one for a local or NFS file system, several for a parallel one).
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Number of identical servers.
    pub count: usize,
    /// Server NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// The switch the servers attach to.
    pub switch: String,
    /// CPU time per request at the server in seconds (requests queue FIFO on one CPU).
    pub request_cpu: f64,
    /// The server's cache, if any.
    pub cache: Option<ServerCache>,
    /// Each server's storage device.
    pub device: Device,
}

/// A server's cache in front of its device: an LRU read cache, write-back or write-through.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCache {
    /// Bytes it holds.
    pub capacity: u64,
    /// Copy bandwidth in and out of it in bytes/s.
    pub bandwidth: f64,
    /// True: writes complete in the cache and a flusher writes them to the device;
    /// false: writes go through to the device before they complete.
    pub write_back: bool,
    /// Fraction of `capacity` that may be dirty (write-back only); writes beyond go through.
    pub dirty_ratio: f64,
}

/// Order in which an HDD serves queued requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOrder {
    /// Arrival order: each request seeks from the previous one.
    Fifo,
    /// Elevator (SCAN): a request joins the sorted sweep and seeks from its nearest queued neighbour.
    Elevator,
}

/// A storage device.
#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    /// Flash: per-request latency, bandwidth, internal channels.
    Ssd(Ssd),
    /// Disk: seek over distance, rotation, zoned transfer rate, queue order.
    Hdd(Hdd),
    /// RAID 0, 5 or 6 over identical member devices.
    Raid(Raid),
}

/// A solid-state device.
#[derive(Debug, Clone, PartialEq)]
pub struct Ssd {
    /// Read bandwidth in bytes/s.
    pub read_bw: f64,
    /// Write bandwidth in bytes/s.
    pub write_bw: f64,
    /// Write bandwidth in bytes/s for blocks the file has written to the device
    /// before (overwrites in place); `write_bw` is then the rate of new ones,
    /// which a file system allocates on write-back (and a sparse or
    /// thin-provisioned backing allocates again below it).
    pub overwrite_bw: f64,
    /// Service latency per read request in seconds.
    pub read_latency: f64,
    /// Service latency per write request in seconds.
    pub write_latency: f64,
    /// Relative spread of the request latency: each request's latency is drawn
    /// uniformly from `latency·(1 ± jitter)` with the model's seeded RNG. 0 = none.
    pub latency_jitter: f64,
    /// Requests whose latency phases overlap (internal channels / dies); more queue.
    pub channels: usize,
}

/// A hard disk (Ruemmler & Wilkes, *An introduction to disk drive modeling*, IEEE Computer 27(3), 1994).
#[derive(Debug, Clone, PartialEq)]
pub struct Hdd {
    /// Capacity in bytes (seek distances are fractions of it).
    pub capacity: u64,
    /// Spindle speed in revolutions per minute.
    pub rpm: f64,
    /// Track-to-track seek time in seconds (shortest non-zero seek).
    pub seek_track: f64,
    /// Full-stroke seek time in seconds.
    pub seek_full: f64,
    /// Media transfer rate at the outer edge (offset 0) in bytes/s.
    pub transfer_rate: f64,
    /// Media transfer rate at the inner edge in bytes/s (zoned recording).
    pub transfer_rate_inner: f64,
    /// Queue order.
    pub queue: QueueOrder,
}

/// A RAID array (Chen, Lee, Gibson, Katz & Patterson, *RAID: High-Performance,
/// Reliable Secondary Storage*, ACM Computing Surveys 26(2), 1994).
#[derive(Debug, Clone, PartialEq)]
pub struct Raid {
    /// 0, 5 or 6.
    pub level: u8,
    /// Member devices (data + parity).
    pub disks: usize,
    /// Stripe unit in bytes (contiguous bytes on one member).
    pub stripe_unit: u64,
    /// The member device (every member alike; not itself a RAID).
    pub member: Box<Device>,
}

/// Kind of file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    /// A local file system: the one "server" is the node's own block layer.
    Local,
    /// NFS-like: one server; clients flush dirty data on close (close-to-open consistency).
    Nfs,
    /// Parallel (Lustre/PVFS2/GPFS-like): files striped over the servers.
    Parallel,
}

/// The file system.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSystem {
    /// Kind.
    pub kind: FsKind,
    /// Stripe size in bytes (parallel; consecutive stripes go to consecutive servers).
    pub stripe_size: u64,
    /// Servers a file is striped over (parallel; ≤ server count).
    pub stripe_count: usize,
    /// Extent-lock granularity in bytes (Lustre LDLM / GPFS byte-range tokens); `None` = no locking.
    pub lock_granularity: Option<u64>,
    /// Time to revoke a lock held by another client (callback round trip), in seconds.
    pub lock_revoke: f64,
    /// Whether a node's buffered writes to one file copy into its page cache
    /// one at a time (`write_lock = "inode"`: Linux's ext4, XFS and NFS client
    /// hold the inode lock for a whole buffered write) or in parallel
    /// (`"none"`, the default: Lustre's client locks ranges).
    pub inode_write_lock: bool,
    /// Whether a write's system call runs under that inode lock as well as
    /// its copy (`write_lock_span = "call"`: ext4 takes it on entry to the
    /// buffered write, before the page lookups and block reservations a
    /// small write's time goes to) or only the copy (`"copy"`, the default).
    pub locked_syscall: bool,
}

/// Metadata operation costs at the server, in seconds each; the server runs them one at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// Open an existing file.
    pub open: f64,
    /// Create a file (instead of `open` when it does not exist).
    pub create: f64,
    /// Close.
    pub close: f64,
    /// Delete.
    pub delete: f64,
    /// Bytes of a deleted file dropped per second (`delete_bw`; absent =
    /// infinite): unlinking a large file drops its cached pages and frees its
    /// extents, a cost in its size on top of `delete`.
    pub delete_bw: f64,
    /// `fsync`/`MPI_File_sync`: the journal commit after the dirty data reached the servers.
    pub sync: f64,
}

/// MPI-IO middleware costs.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiIo {
    /// Time to read and update the shared file pointer once (ROMIO keeps it in a
    /// hidden file under a lock), in seconds.
    pub shared_pointer: f64,
    /// CPU time of each independent data call (`MPI_File_{read,write}[_at]`,
    /// their nonblocking forms) in the MPI-IO library above its system calls
    /// (ROMIO's argument checks, view handling, ADIO dispatch), in seconds. 0 = free.
    pub independent_call: f64,
    /// CPU time of each collective data call (`*_all`, ordered calls) beyond
    /// the modelled messages (computing and exchanging offsets, file-domain and
    /// request bookkeeping), in seconds. 0 = free.
    pub collective_call: f64,
    /// CPU time of `MPI_File_open` on each rank beyond the metadata operation
    /// (communicator duplicate, hints, ADIO set-up), in seconds. 0 = free.
    pub open: f64,
    /// CPU time of `MPI_File_close` on each rank beyond the metadata operation, in seconds. 0 = free.
    pub close: f64,
    /// CPU time a process's first `MPI_File_open` takes beyond `open` (the
    /// library's set-up on first use: ROMIO's ADIO initialisation, its code
    /// paged in), in seconds. 0 = none.
    pub first_open: f64,
    /// CPU time a process's first `MPI_File_close` takes beyond `close`, in seconds. 0 = none.
    pub first_close: f64,
    /// Message steps of a collective `MPI_File_open` beyond the one
    /// synchronisation the twin makes (ROMIO duplicates the communicator,
    /// agrees on the access mode, gathers the host names for
    /// `cb_config_list`, agrees on errors): each costs one message step of the
    /// communicator, the wake-up included on an oversubscribed node. 0 = none.
    pub open_steps: f64,
    /// Message steps of the exchange of every rank's start and end offsets
    /// that opens each collective data call (ROMIO's two all-gathers), each a
    /// message step of the communicator. Given, the twin synchronises
    /// collective calls as ROMIO does: a call whose ranks do not interleave
    /// (independent I/O) and a two-phase read end with the rank's own part, a
    /// two-phase write with a collective of the error codes. `None`: the
    /// generic cost, ceil(log2 N) steps and a closing barrier on every call.
    pub offsets_steps: Option<f64>,
}

/// The kind of value a scenario key holds, and so the unit a
/// [`Calibrated`] value of it is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A size in bytes (`"4MiB"`).
    Size,
    /// A data rate in bytes/s (`"200MB/s"`).
    Rate,
    /// A time in seconds (`"5us"`).
    Time,
    /// A compute rate in flop/s (`"2Gflop/s"`).
    Flops,
    /// A plain number (counts, ratios): written without a unit.
    Number,
}

/// One fitted parameter as the calibrator recorded it in `[calibration."<key path>"]`:
/// the value, its confidence interval, the probe it came from and the fit's quality.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    /// What the key holds (the unit of `value`, `low` and `high`).
    pub kind: KeyKind,
    /// The fitted value in the key's base unit (s, B, B/s, flop/s or a plain number).
    pub value: f64,
    /// Lower confidence bound, same unit.
    pub low: f64,
    /// Upper confidence bound, same unit.
    pub high: f64,
    /// `value`, `low` and `high` as written in the file.
    pub text: [String; 3],
    /// The probe the value was fitted from (e.g. `"iozone seq write, 1 rank"`).
    pub probe: String,
    /// The fit's quality as the calibrator states it (e.g. `"r2=0.998 n=24"`).
    pub quality: String,
}

impl Calibrated {
    /// This entry as the TOML table the parser reads back, under `key` (a key path
    /// such as `mpiio.independent_call` or `nodes[0].cache.write_bw`).
    pub fn to_toml(&self, key: &str) -> String {
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let v = |s: &str| match self.kind {
            KeyKind::Number => s.to_string(),
            _ => q(s),
        };
        format!(
            "[calibration.{}]\nvalue = {}\nlow = {}\nhigh = {}\nprobe = {}\nquality = {}\n",
            q(key),
            v(&self.text[0]),
            v(&self.text[1]),
            v(&self.text[2]),
            q(&self.probe),
            q(&self.quality)
        )
    }
}

/// A storage system. Built by [`Scenario::load`] or [`Scenario::from_str`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The file it was read from.
    pub file: String,
    /// Short name.
    pub name: String,
    /// One line describing the system.
    pub description: String,
    /// Default RNG seed for runs of this scenario.
    pub seed: u64,
    /// Where the numbers came from: topic (or key path) → note, in key order.
    pub source: BTreeMap<String, String>,
    /// Compute node groups; ranks are placed over them in order.
    pub nodes: Vec<NodeGroup>,
    /// How ranks are placed on the nodes.
    pub placement: Placement,
    /// The interconnect.
    pub network: Network,
    /// The I/O servers.
    pub server: Server,
    /// The file system.
    pub filesystem: FileSystem,
    /// Metadata costs.
    pub metadata: Metadata,
    /// MPI-IO middleware costs.
    pub mpiio: MpiIo,
    /// Fitted parameters with their confidence intervals, by key path (the
    /// `[calibration]` table `piotwin calibrate` writes); empty for datasheet scenarios.
    pub calibration: BTreeMap<String, Calibrated>,
    /// How much repeated probe runs differed on the calibrated machine
    /// (`[run_to_run]`); `None` for datasheet scenarios.
    pub run_to_run: Option<Spread>,
    /// How far the calibrated twin's predictions of calibration's own probes
    /// were beyond that noise (`[model_error]`); `None` for datasheet scenarios.
    pub model_error: Option<Spread>,
}

/// How ranks are placed on the nodes, as the launcher places them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Node after node, `cores` ranks each (`mpiexec` filling slots; Open MPI
    /// `--map-by slot`, the "sequential" placement of b_eff's papers).
    Block,
    /// Rank `r` on the `r mod nodes`-th node with a core left (Hydra's `-rr`,
    /// Open MPI `--map-by node`).
    RoundRobin,
}

/// A spread calibration measured, with where it came from: `[run_to_run]`
/// (repeated runs of the same probe compared with each other) or
/// `[model_error]` (the twin's predictions of the probes against them).
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// Standard deviation of the natural log of a ratio of bandwidths.
    pub spread: f64,
    /// The probes it was measured over.
    pub probe: String,
    /// How many, and how it was computed.
    pub quality: String,
}

impl Scenario {
    /// Total number of compute nodes over all groups.
    pub fn node_count(&self) -> usize {
        self.nodes.iter().map(|g| g.count).sum()
    }

    /// Total number of cores over all groups.
    pub fn core_count(&self) -> usize {
        self.nodes.iter().map(|g| g.count * g.cores).sum()
    }
}
