//! The human summary of a scenario (`piotwin scenario check`).

use std::fmt;

use super::*;
use crate::units;

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use units::{fmt_rate, fmt_size, fmt_time};
        writeln!(
            f,
            "scenario `{}` ({}), seed {}",
            self.name, self.file, self.seed
        )?;
        if !self.description.is_empty() {
            writeln!(f, "  {}", self.description)?;
        }
        writeln!(
            f,
            "  compute: {} node(s), {} core(s)",
            self.node_count(),
            self.core_count()
        )?;
        for g in &self.nodes {
            writeln!(
                f,
                "    {} × `{}`: {} cores, {} memory, NIC {} / {}; memcpy {}, fft {:.2} Gflop/s, bt {:.2} Gflop/s, other {:.2} Gflop/s",
                g.count,
                g.name,
                g.cores,
                fmt_size(g.memory),
                fmt_rate(g.nic_bw),
                fmt_time(g.nic_latency),
                fmt_rate(g.compute.memcpy),
                g.compute.fft / 1e9,
                g.compute.bt / 1e9,
                g.compute.flops / 1e9
            )?;
            let a = g.compute.all_cores;
            if [a.fft, a.signal, a.bt, a.flops, a.pattern] != [1.0; 5] {
                writeln!(
                    f,
                    "      with every core running ranks: fft ×{}, signal ×{}, bt ×{}, other ×{}, data pattern ×{}",
                    a.fft, a.signal, a.bt, a.flops, a.pattern
                )?;
            }
            if g.compute.pattern.is_finite() {
                writeln!(f, "      data pattern {}", fmt_rate(g.compute.pattern))?;
            }
            if g.compute.pattern_check != g.compute.pattern {
                writeln!(
                    f,
                    "      pattern check {}",
                    fmt_rate(g.compute.pattern_check)
                )?;
            }
            if let Some(rate) = g.compute.error_norm {
                writeln!(
                    f,
                    "      BTIO's error norm {} of the dump (×{} with every core running ranks)",
                    fmt_rate(rate),
                    a.error_norm
                )?;
            }
            if g.compute.private_cache > 0 {
                writeln!(
                    f,
                    "      buffers up to {} (a core's private cache): pattern {}, check {}",
                    fmt_size(g.compute.private_cache),
                    fmt_rate(g.compute.pattern_cached),
                    fmt_rate(g.compute.pattern_check_cached)
                )?;
            }
            if g.memory_bw != g.compute.memcpy {
                writeln!(f, "      memory bus {} per node", fmt_rate(g.memory_bw))?;
            }
            if g.message_bw != g.compute.memcpy {
                writeln!(
                    f,
                    "      intra-node messages {} per core",
                    fmt_rate(g.message_bw)
                )?;
            }
            if g.memory_read_bw != g.memory_bw {
                writeln!(
                    f,
                    "      memory bus {} per node for reads out of the page cache",
                    fmt_rate(g.memory_read_bw)
                )?;
            }
            if g.memory_write_bw != g.memory_bw {
                writeln!(
                    f,
                    "      memory bus {} per node for writes into new page-cache pages",
                    fmt_rate(g.memory_write_bw)
                )?;
            }
        }
        if self.placement == Placement::RoundRobin {
            writeln!(f, "  ranks placed round robin over the nodes")?;
        }
        writeln!(
            f,
            "  network: switch {} / {}",
            fmt_rate(self.network.bandwidth),
            fmt_time(self.network.latency)
        )?;
        let sv = &self.server;
        writeln!(
            f,
            "  servers: {} × (NIC {}, CPU {}/request, on switch `{}`); device: {}",
            sv.count,
            fmt_rate(sv.nic_bw),
            fmt_time(sv.request_cpu),
            sv.switch,
            sv.device
        )?;
        if let Some(c) = &sv.cache {
            writeln!(
                f,
                "  server cache: {} at {}, {}",
                fmt_size(c.capacity),
                fmt_rate(c.bandwidth),
                if c.write_back {
                    format!("write-back (dirty ≤ {:.0}%)", c.dirty_ratio * 100.0)
                } else {
                    "write-through".to_string()
                }
            )?;
        }
        for g in &self.nodes {
            if let Some(c) = &g.cache {
                writeln!(
                    f,
                    "  page cache of `{}`: {}, dirty_ratio {:.0}%, dirty_background_ratio {:.0}%, {}",
                    g.name,
                    fmt_size(c.capacity),
                    c.dirty_ratio * 100.0,
                    c.dirty_background_ratio * 100.0,
                    match c.readahead {
                        0 => "no read-ahead".to_string(),
                        r => format!("read-ahead up to {}", fmt_size(r)),
                    }
                )?;
                if c.direct_from != u64::MAX {
                    writeln!(
                        f,
                        "    requests of {} or more bypass it (direct I/O)",
                        fmt_size(c.direct_from)
                    )?;
                }
                if c.fresh_bw.is_finite() {
                    writeln!(
                        f,
                        "    fresh memory beyond {} backed: {} per node",
                        fmt_size(c.warm),
                        fmt_rate(c.fresh_bw)
                    )?;
                }
                if c.fresh_holds_core && c.fresh_bw.is_finite() {
                    writeln!(f, "    growth into fresh memory holds the writer's core")?;
                }
                if c.huge_from != u64::MAX {
                    writeln!(
                        f,
                        "    writes of {} or more cached in huge pages: not from the warm floor",
                        fmt_size(c.huge_from)
                    )?;
                }
                if c.free.is_finite() {
                    writeln!(
                        f,
                        "    {} free and not backed at the start",
                        fmt_size(c.free as u64)
                    )?;
                }
                if c.release_time.is_finite() {
                    writeln!(
                        f,
                        "    freed memory beyond that handed back over {}",
                        fmt_time(c.release_time)
                    )?;
                }
                if c.write_bw != g.compute.memcpy || c.read_bw != g.compute.memcpy {
                    writeln!(
                        f,
                        "    page-cache copies per core: write {}, read {}",
                        fmt_rate(c.write_bw),
                        fmt_rate(c.read_bw)
                    )?;
                }
                if c.rewrite_bw != c.write_bw {
                    writeln!(
                        f,
                        "    writes into pages already cached: {} per core",
                        fmt_rate(c.rewrite_bw)
                    )?;
                }
            }
            if g.fortran_statement > 0.0 {
                writeln!(
                    f,
                    "  Fortran runtime on `{}`: {} per data-transfer statement",
                    g.name,
                    fmt_time(g.fortran_statement)
                )?;
            }
            if g.waiting_ranks == WaitingRanks::Poll {
                writeln!(
                    f,
                    "  ranks waiting in MPI on `{}` busy-poll when it runs more ranks than cores ({} wake-up of a step among no more ranks than cores)",
                    g.name,
                    fmt_time(g.polled_wakeup)
                )?;
                if g.release_stagger > 0.0 {
                    writeln!(
                        f,
                        "  ranks of `{}` leave a collective with more of them than cores staggered: the first `cores` {} before the others",
                        g.name,
                        fmt_time(g.release_stagger)
                    )?;
                }
                if g.sleeping_ranks == SleepingRanks::Yield {
                    writeln!(
                        f,
                        "  ranks of `{}` sleeping in the kernel (locks, dirty limit, devices) leave their share of the cores to the others",
                        g.name
                    )?;
                    if g.wake_slice.is_finite() {
                        writeln!(
                            f,
                            "  a rank of `{}` woken from such a sleep runs on a whole core for {}, then at its share",
                            g.name,
                            fmt_time(g.wake_slice)
                        )?;
                    }
                }
            }
            if g.mmap_from < u64::MAX && g.compute.first_touch.is_finite() {
                writeln!(
                    f,
                    "  MPI's temporary buffers of {} or more on `{}` are freshly mapped each call, filled at {}",
                    fmt_size(g.mmap_from),
                    g.name,
                    fmt_rate(g.compute.first_touch)
                )?;
            }
            if g.eager_limit < u64::MAX {
                writeln!(
                    f,
                    "  messages above {} on `{}` go by rendezvous: a step of one to a rank of an oversubscribed node wakes it twice",
                    fmt_size(g.eager_limit),
                    g.name
                )?;
            }
            if g.syscall > 0.0 || g.oversubscribed_wakeup > 0.0 {
                writeln!(
                    f,
                    "  CPU costs on `{}`: {} per system call, {} wake-up of a rank on an oversubscribed node",
                    g.name,
                    fmt_time(g.syscall),
                    fmt_time(g.oversubscribed_wakeup)
                )?;
            }
            if g.allreduce_wake != 1.0 {
                writeln!(
                    f,
                    "  an all-reduce's step on `{}` waits {} of a wake-up",
                    g.name, g.allreduce_wake
                )?;
            }
            if g.read_syscall != g.syscall {
                writeln!(
                    f,
                    "  a read system call on `{}` takes {}",
                    g.name,
                    fmt_time(g.read_syscall)
                )?;
            }
            if g.oversubscribed_unpack_bw.is_finite() || g.oversubscribed_pack_bw.is_finite() {
                let rate = |r: f64| match r.is_finite() {
                    true => fmt_rate(r),
                    false => "not modelled".to_string(),
                };
                writeln!(
                    f,
                    "  derived-datatype messages on `{}` when oversubscribed: received (unpacked) at {}, sent (packed) at {}",
                    g.name,
                    rate(g.oversubscribed_unpack_bw),
                    rate(g.oversubscribed_pack_bw)
                )?;
            }
        }
        if let Some(t) = &self.network.torus {
            writeln!(
                f,
                "  torus {}×{}×{}: {} / {} per link, dimension-order routes",
                t.dims[0],
                t.dims[1],
                t.dims[2],
                fmt_rate(t.bandwidth),
                fmt_time(t.latency)
            )?;
        }
        for l in &self.network.links {
            writeln!(
                f,
                "  link {} ↔ {}: {} / {}",
                l.from,
                l.to,
                fmt_rate(l.bandwidth),
                fmt_time(l.latency)
            )?;
        }
        let fs = &self.filesystem;
        writeln!(
            f,
            "  file system: {}{}{}",
            match fs.kind {
                FsKind::Local => "local".to_string(),
                FsKind::Nfs => "NFS-like, one server".to_string(),
                FsKind::Parallel => format!(
                    "parallel, stripe {} over {} of {} servers",
                    fmt_size(fs.stripe_size),
                    fs.stripe_count,
                    sv.count
                ),
            },
            match fs.lock_granularity {
                Some(g) => format!(
                    "; extent locks of {}, revoke {}",
                    fmt_size(g),
                    fmt_time(fs.lock_revoke)
                ),
                None => String::new(),
            },
            match (fs.inode_write_lock, fs.locked_syscall) {
                (true, false) => "; buffered writes to a file one at a time per node",
                (true, true) => {
                    "; buffered writes to a file one at a time per node, system call included"
                }
                (false, _) => "",
            }
        )?;
        let m = &self.metadata;
        writeln!(
            f,
            "  metadata: open {}, create {}, close {}, delete {}, sync {}",
            fmt_time(m.open),
            fmt_time(m.create),
            fmt_time(m.close),
            fmt_time(m.delete),
            fmt_time(m.sync)
        )?;
        if m.delete_bw.is_finite() {
            writeln!(
                f,
                "    a deleted file's bytes dropped at {}",
                fmt_rate(m.delete_bw)
            )?;
        }
        let mp = &self.mpiio;
        writeln!(
            f,
            "  mpi-io: shared file pointer update {}; CPU per call: independent {}, collective {}, open {}, close {}",
            fmt_time(mp.shared_pointer),
            fmt_time(mp.independent_call),
            fmt_time(mp.collective_call),
            fmt_time(mp.open),
            fmt_time(mp.close)
        )?;
        if mp.first_open > 0.0 || mp.first_close > 0.0 {
            writeln!(
                f,
                "    a process's first open takes {} more, its first close {} more",
                fmt_time(mp.first_open),
                fmt_time(mp.first_close)
            )?;
        }
        if mp.open_steps > 0.0 {
            writeln!(
                f,
                "    a collective open makes {:.3} message steps beyond its synchronisation",
                mp.open_steps
            )?;
        }
        if let Some(steps) = mp.offsets_steps {
            writeln!(
                f,
                "    a collective data call exchanges the offsets in {steps:.3} message steps and synchronises as ROMIO's"
            )?;
        }
        for (k, c) in &self.calibration {
            writeln!(
                f,
                "  calibrated {k} = {} [{} .. {}] from `{}`{}",
                c.text[0],
                c.text[1],
                c.text[2],
                c.probe,
                if c.quality.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", c.quality)
                }
            )?;
        }
        for (k, v) in &self.source {
            writeln!(f, "  source[{k}]: {v}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use units::{fmt_rate, fmt_size, fmt_time};
        match self {
            Device::Ssd(d) => write!(
                f,
                "SSD read {} + {}/req, write {} + {}/req{}, {} channel(s){}",
                fmt_rate(d.read_bw),
                fmt_time(d.read_latency),
                fmt_rate(d.write_bw),
                fmt_time(d.write_latency),
                if d.overwrite_bw != d.write_bw {
                    format!(" (overwrites {})", fmt_rate(d.overwrite_bw))
                } else {
                    String::new()
                },
                d.channels,
                if d.latency_jitter > 0.0 {
                    format!(", latency jitter ±{:.0}%", d.latency_jitter * 100.0)
                } else {
                    String::new()
                }
            ),
            Device::Hdd(d) => write!(
                f,
                "HDD {} at {} rpm, seek {}..{}, {}..{}, {} queue",
                fmt_size(d.capacity),
                d.rpm,
                fmt_time(d.seek_track),
                fmt_time(d.seek_full),
                fmt_rate(d.transfer_rate),
                fmt_rate(d.transfer_rate_inner),
                match d.queue {
                    QueueOrder::Fifo => "FIFO",
                    QueueOrder::Elevator => "elevator",
                }
            ),
            Device::Raid(r) => write!(
                f,
                "RAID{} over {} × [{}], stripe unit {}",
                r.level,
                r.disks,
                r.member,
                fmt_size(r.stripe_unit)
            ),
        }
    }
}
