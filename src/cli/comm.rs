//! `snowsim comm check`: every operation of the communication layer between the ranks this
//! process runs with (under `mpirun`, MPI's; with `--local N`, N threads), checked on rank 0
//! against what it must give, and the link's latency and bandwidth.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use snowsim::comm::{self, Comm, HaloPlan, Local, Neighbour};

use super::console::outln;

/// The most ranks `--local` runs (each a thread of this process).
const MAX_LOCAL_RANKS: usize = 256;

/// Options of `snowsim comm check`.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Check the communication layer between ranks and time its link.\n\n\
                  Under `mpirun -n K snowsim comm check`, the K processes are MPI's ranks (a \
                  build with the `mpi` feature; scripts/setup builds one); with --local N, N \
                  threads of this process. Every rank runs a broadcast, a gather, sums in \
                  double precision whose value depends on the order of the additions (they \
                  must come out as a fixed binary tree of the ranks adds them, on every rank), an exact \
                  integer sum, a halo exchange around a ring of ranks, a migration of records \
                  to other ranks and a barrier; rank 0 checks each against what it must be \
                  and prints the results (the same for MPI and --local with as many ranks) \
                  and, with two ranks or more, the round trip between ranks 0 and 1: latency \
                  (8-byte messages) and bandwidth (1 MiB). Exit status 1 if a check fails.\n\n\
                  As root, Open MPI's mpirun needs --allow-run-as-root, and --oversubscribe \
                  for more ranks than cores."
)]
pub struct Args {
    /// Run N ranks as threads of this process instead of MPI's (at most 256).
    #[arg(long, value_name = "N")]
    local: Option<usize>,
    /// Seconds a receive waits for its peer before the run fails naming it.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    timeout: f64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Testing: rank R stops right after it starts, as a rank that died.
    #[arg(long, value_name = "R", hide = true)]
    die_rank: Option<usize>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let timeout = match Duration::try_from_secs_f64(args.timeout) {
        Ok(t) if t > Duration::ZERO => t,
        _ => bail!(
            "--timeout {:?}: give a number of seconds from 1e-9 to about 1.8e19",
            args.timeout
        ),
    };
    let report = match args.local {
        Some(0) => bail!("--local 0: give at least one rank"),
        Some(n) if n > MAX_LOCAL_RANKS => {
            bail!("--local {n}: at most {MAX_LOCAL_RANKS} ranks run as threads of one process")
        }
        Some(n) => {
            let results = Local::run(n, timeout, |c| check(c, args.die_rank, "local"));
            let mut report = None;
            for (rank, r) in results.into_iter().enumerate() {
                match r {
                    Ok(Ok(Some(v))) => report = Some(v),
                    Ok(Ok(None)) => {}
                    Ok(Err(e)) => return Err(e.context(format!("rank {rank}"))),
                    Err(panic) => bail!("rank {rank} panicked: {panic}"),
                }
            }
            report
        }
        None => {
            let world = comm::world_with(timeout)?;
            let backend = match comm::launcher() {
                Some(_) if cfg!(feature = "mpi") => "mpi",
                _ => "local",
            };
            check(world.as_ref(), args.die_rank, backend)?
        }
    };
    let Some(report) = report else {
        return Ok(ExitCode::SUCCESS);
    };
    let failed = report["failed"].as_array().is_some_and(|f| !f.is_empty());
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_text(&report)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_text(report: &Value) -> anyhow::Result<()> {
    outln!(
        "{} ranks ({}): {} checks passed{}",
        report["size"],
        report["backend"].as_str().unwrap_or("?"),
        report["passed"].as_array().map_or(0, Vec::len),
        match report["failed"].as_array() {
            Some(f) if !f.is_empty() => format!(", FAILED: {}", Value::Array(f.clone())),
            _ => String::new(),
        }
    )?;
    if let Some(link) = report.get("link") {
        outln!(
            "ranks 0 and 1: latency {:.2} µs (half an 8-byte round trip), bandwidth {:.2} GB/s \
             (1 MiB messages)",
            link["latency_us"].as_f64().unwrap_or(f64::NAN),
            link["bandwidth_gb_s"].as_f64().unwrap_or(f64::NAN)
        )?;
    }
    Ok(())
}

/// One rank's part of the check; rank 0 returns the report.
fn check(
    c: &dyn Comm,
    die_rank: Option<usize>,
    backend: &'static str,
) -> anyhow::Result<Option<Value>> {
    let (rank, size) = (c.rank(), c.size());
    if die_rank == Some(rank) {
        // A rank that died: nothing sent, nothing finalized.
        if backend == "mpi" {
            std::process::exit(3);
        }
        return Ok(None);
    }
    let mut passed: Vec<&str> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut verdict = |name: &'static str, ok: bool, detail: String| match ok {
        true => passed.push(name),
        false => failed.push(format!("{name}: {detail}")),
    };

    // Broadcast: rank 0's bytes everywhere.
    let mut data = if rank == 0 {
        b"snow on every rank".to_vec()
    } else {
        Vec::new()
    };
    comm::broadcast(c, 0, &mut data).context("broadcast")?;
    let all = comm::all_gather(c, &data).context("all_gather")?;
    verdict(
        "broadcast",
        all.iter().all(|d| d == b"snow on every rank"),
        format!("{all:?}"),
    );

    // Gather: every rank's id on rank 0, in order.
    let gathered = comm::gather(c, 0, &(rank as u64).to_le_bytes()).context("gather")?;
    if let Some(g) = &gathered {
        let ids: Vec<u64> = g.iter().map(|b| le_u64(b)).collect();
        verdict(
            "gather",
            ids == (0..size as u64).collect::<Vec<_>>(),
            format!("{ids:?}"),
        );
    }

    // Sums of f64 whose value depends on the order: rank 0's sum in rank order everywhere.
    // 1e16 + 1 rounds to 1e16: the first sum depends on which terms meet first.
    let mine = |r: usize| {
        let big = [1.0, 1e16, -1e16][r % 3];
        [big, 1.0 + r as f64, 0.1 * r as f64]
    };
    let mut sums = mine(rank);
    comm::all_reduce_sum_f64(c, &mut sums).context("all_reduce_sum_f64")?;
    let parts: Vec<Vec<f64>> = (0..size).map(|r| mine(r).to_vec()).collect();
    let want = comm::fold_in_tree_order(&parts, |a, b| a + b);
    let bits: Vec<u8> = sums.iter().flat_map(|s| s.to_le_bytes()).collect();
    let everywhere = comm::all_gather(c, &bits).context("all_gather")?;
    verdict(
        "sum_f64",
        want.len() == sums.len()
            && sums
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits())
            && everywhere.iter().all(|b| *b == bits),
        format!("{sums:?} against {want:?}"),
    );
    let mut most = [rank as f64, -(rank as f64)];
    comm::all_reduce_max_f64(c, &mut most).context("all_reduce_max_f64")?;
    verdict(
        "max_f64",
        most == [(size - 1) as f64, 0.0],
        format!("{most:?}"),
    );
    let mut exact = [rank as i64 * 1_000_000_007, i64::MAX / 64 - rank as i64];
    comm::all_reduce_sum_i64(c, &mut exact).context("all_reduce_sum_i64")?;
    let n = size as i64;
    let want_i = [
        1_000_000_007 * n * (n - 1) / 2,
        (i64::MAX / 64)
            .wrapping_mul(n)
            .wrapping_sub(n * (n - 1) / 2),
    ];
    verdict(
        "sum_i64",
        exact == want_i,
        format!("{exact:?} against {want_i:?}"),
    );

    // A ring's halo: entries 0..6 owned, 6 the previous rank's entry 5, 7 the next's entry 0.
    let mut values: Vec<u32> = (0..8)
        .map(|i| {
            if i < 6 {
                100 * rank as u32 + i
            } else {
                u32::MAX
            }
        })
        .collect();
    let plan = ring(rank, size);
    comm::exchange_halo(c, &plan, &mut values).context("exchange_halo")?;
    if size > 1 {
        let (prev, next) = ((rank + size - 1) % size, (rank + 1) % size);
        let want = [100 * prev as u32 + 5, 100 * next as u32];
        verdict(
            "halo",
            values[6..] == want,
            format!("{:?} against {want:?}", &values[6..]),
        );
    }

    // Migration: record (source, k) to rank (7 source + 3 k) % size.
    let outgoing: Vec<(usize, [u32; 2])> = (0..5u32)
        .map(|k| ((7 * rank + 3 * k as usize) % size, [rank as u32, k]))
        .collect();
    let arrived = comm::migrate(c, outgoing).context("migrate")?;
    let want_m: Vec<[u32; 2]> = (0..size)
        .flat_map(|s| (0..5u32).map(move |k| (s, k)))
        .filter(|&(s, k)| (7 * s + 3 * k as usize) % size == rank)
        .map(|(s, k)| [s as u32, k])
        .collect();
    let ok = arrived == want_m;
    let counts = comm::gather(c, 0, &[u8::from(ok)]).context("gather")?;
    if let Some(counts) = counts {
        verdict(
            "migrate",
            counts.iter().all(|b| b.as_slice() == [1]),
            format!("ranks' verdicts {counts:?}"),
        );
    }
    comm::barrier(c).context("barrier")?;

    let link = if size > 1 { ping_pong(c)? } else { None };
    if rank != 0 {
        return Ok(None);
    }
    let mut report = json!({
        "size": size,
        "backend": backend,
        "passed": passed,
        "failed": failed,
        "sum_f64": want,
        "sum_i64": want_i,
    });
    if let Some((latency, bandwidth)) = link {
        report["link"] = json!({ "latency_us": latency, "bandwidth_gb_s": bandwidth });
    }
    Ok(Some(report))
}

/// The ring's plan for `rank` of `size`: to the previous rank entry 0, to the next entry 5;
/// from the previous into 6, from the next into 7 (one neighbour both ways with two ranks).
fn ring(rank: usize, size: usize) -> HaloPlan {
    let mut plan = HaloPlan::default();
    if size < 2 {
        return plan;
    }
    let (prev, next) = ((rank + size - 1) % size, (rank + 1) % size);
    for peer in [prev, next] {
        if plan.neighbours.iter().any(|n| n.rank == peer) {
            continue;
        }
        let mut n = Neighbour {
            rank: peer,
            ..Neighbour::default()
        };
        if peer == next {
            n.send.push(5);
        }
        if peer == prev {
            n.send.push(0);
        }
        if peer == prev {
            n.recv.push(6);
        }
        if peer == next {
            n.recv.push(7);
        }
        plan.neighbours.push(n);
    }
    plan
}

/// Ranks 0 and 1 bounce messages: half an 8-byte round trip (µs) and the bandwidth of 1 MiB
/// messages (GB/s), on rank 0.
fn ping_pong(c: &dyn Comm) -> anyhow::Result<Option<(f64, f64)>> {
    const TAG: u32 = 77;
    let rank = c.rank();
    if rank > 1 {
        return Ok(None);
    }
    let peer = 1 - rank;
    let time = |bytes: usize, trips: u32| -> anyhow::Result<Duration> {
        let payload = vec![7u8; bytes];
        let start = Instant::now();
        for _ in 0..trips {
            if rank == 0 {
                c.send(peer, TAG, &payload)?;
                c.recv(peer, TAG, "a ping-pong")?;
            } else {
                let got = c.recv(peer, TAG, "a ping-pong")?;
                c.send(peer, TAG, &got)?;
            }
        }
        Ok(start.elapsed())
    };
    time(8, 100)?;
    let small = time(8, 2000)?;
    let big = time(1 << 20, 50)?;
    let latency = small.as_secs_f64() / 4000.0 * 1e6;
    let bandwidth = 2.0 * 50.0 * (1 << 20) as f64 / big.as_secs_f64() / 1e9;
    Ok((rank == 0).then_some((latency, bandwidth)))
}

fn le_u64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    for (d, s) in w.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(w)
}
