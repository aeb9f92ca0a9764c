//! The in-process backend against serial references; what the MPI backend must give the same
//! is checked by `tests/app/comm.rs` under `mpirun`.

use std::time::{Duration, Instant};

use super::*;

const SHORT: Duration = Duration::from_secs(20);

/// Runs `work` on `n` ranks and unwraps every rank's result.
fn on<R: Send>(n: usize, work: impl Fn(&dyn Comm) -> Result<R> + Sync) -> Vec<R> {
    Local::run(n, SHORT, work)
        .into_iter()
        .enumerate()
        .map(|(r, x)| match x {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => panic!("rank {r}: {e}"),
            Err(p) => panic!("rank {r} panicked: {p}"),
        })
        .collect()
}

/// A value per (rank, slot) whose sum depends on the order of the additions.
fn value(rank: usize, slot: usize) -> f64 {
    let x = ((rank * 7919 + slot * 104_729) % 1000) as f64;
    [1.0, 1e16, 0.5 + x, -1e16, 1e-3 * x][(rank + slot) % 5]
}

#[test]
fn collectives_give_the_serial_results_on_every_rank() {
    for n in [1, 2, 3, 5, 6, 8] {
        let results = on(n, |c| {
            let r = c.rank();
            let mut data = if r == 0 { vec![1, 2, 3] } else { vec![] };
            broadcast(c, 0, &mut data)?;
            // From every other root in turn, one after another on the same tags.
            let mut roots = Vec::new();
            for root in 0..n {
                let mut from = if r == root {
                    vec![root as u8; root + 1]
                } else {
                    vec![]
                };
                broadcast(c, root, &mut from)?;
                roots.push(from);
            }
            let gathered = gather(c, n - 1, &[r as u8; 2])?;
            let everyone = all_gather(c, &[r as u8])?;
            let mut sums: Vec<f64> = (0..6).map(|s| value(r, s)).collect();
            all_reduce_sum_f64(c, &mut sums)?;
            let mut exact = [r as i64 * -3, i64::MAX / 8];
            all_reduce_sum_i64(c, &mut exact)?;
            let mut most = [r as f64, if r == 1 { f64::NAN } else { 0.0 }];
            all_reduce_max_f64(c, &mut most)?;
            barrier(c)?;
            Ok((data, roots, gathered, everyone, sums, exact, most))
        });
        let parts: Vec<Vec<f64>> = (0..n)
            .map(|r| (0..6).map(|s| value(r, s)).collect())
            .collect();
        let want = fold_in_tree_order(&parts, |a, b| a + b);
        for (r, (data, roots, gathered, everyone, sums, exact, most)) in results.iter().enumerate()
        {
            assert_eq!(data, &[1, 2, 3]);
            for (root, got) in roots.iter().enumerate() {
                assert_eq!(got, &vec![root as u8; root + 1], "{n} ranks, root {root}");
            }
            assert_eq!(gathered.is_some(), r == n - 1);
            if let Some(g) = gathered {
                assert_eq!(g, &(0..n).map(|k| vec![k as u8; 2]).collect::<Vec<_>>());
            }
            assert_eq!(everyone, &(0..n).map(|k| vec![k as u8]).collect::<Vec<_>>());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(sums), bits(&want), "{n} ranks, rank {r}");
            let n = n as i64;
            assert_eq!(
                *exact,
                [-3 * n * (n - 1) / 2, (i64::MAX / 8).wrapping_mul(n)]
            );
            assert_eq!(most[0], (n - 1) as f64);
            assert_eq!(most[1].is_nan(), n > 1);
        }
    }
    // The order matters for such values: an all-reduce that added in another order than the
    // tree's would fail the test.
    let terms = [1.0, 1e16, -1e16];
    let parts: Vec<Vec<f64>> = terms.iter().map(|&t| vec![t]).collect();
    let tree = fold_in_tree_order(&parts, |a, b| a + b)[0];
    let backwards = terms.iter().rev().fold(0.0, |a, b| a + b);
    assert_eq!((tree, backwards), (0.0, 1.0));
}

#[test]
fn a_halo_exchange_brings_every_halo_entry_from_its_owner() {
    // 200 entries owned by rank (7 i + i / 13) % n; each rank holds them all in the same
    // positions and wants a pseudo-random third of the others' entries as its halo.
    let len = 200;
    let owner = |i: usize, n: usize| (7 * i + i / 13) % n;
    let wants = |rank: usize, i: usize| (i * 31 + rank * 17).is_multiple_of(3);
    for n in [2, 3, 4] {
        let results = on(n, |c| {
            let me = c.rank();
            let mut plan = HaloPlan::default();
            for peer in (0..n).filter(|&p| p != me) {
                let send = (0..len)
                    .filter(|&i| owner(i, n) == me && wants(peer, i))
                    .map(|i| i as u32)
                    .collect();
                let recv = (0..len)
                    .filter(|&i| owner(i, n) == peer && wants(me, i))
                    .map(|i| i as u32)
                    .collect();
                plan.neighbours.push(Neighbour {
                    rank: peer,
                    send,
                    recv,
                });
            }
            plan.neighbours.reverse();
            let mut values: Vec<[f32; 2]> = (0..len)
                .map(|i| match owner(i, n) == me {
                    true => [i as f32, me as f32],
                    false => [-1.0, -1.0],
                })
                .collect();
            exchange_halo(c, &plan, &mut values)?;
            Ok(values)
        });
        for (me, values) in results.iter().enumerate() {
            for (i, v) in values.iter().enumerate() {
                let o = owner(i, n);
                let want = match o == me || wants(me, i) {
                    true => [i as f32, o as f32],
                    false => [-1.0, -1.0],
                };
                assert_eq!(*v, want, "{n} ranks: rank {me}, entry {i}");
            }
        }
    }
}

#[test]
fn migration_delivers_every_record_to_its_rank_in_source_order() {
    let n = 4;
    let results = on(n, |c| {
        let me = c.rank() as u32;
        let out: Vec<(usize, [u32; 2])> = (0..50u32)
            .map(|k| (((k * 13 + me * 5) % 4) as usize, [me, k]))
            .collect();
        migrate(c, out)
    });
    let mut total = 0;
    for (me, got) in results.iter().enumerate() {
        let want: Vec<[u32; 2]> = (0..n as u32)
            .flat_map(|s| (0..50u32).map(move |k| [s, k]))
            .filter(|&[s, k]| ((k * 13 + s * 5) % 4) as usize == me)
            .collect();
        assert_eq!(got, &want, "rank {me}");
        total += got.len();
    }
    assert_eq!(total, 4 * 50);
}

#[test]
fn a_silent_rank_times_out_and_an_ended_one_is_gone_at_once() {
    // Rank 1 is alive but never sends: rank 0's receive fails after the timeout, naming it.
    let timeout = Duration::from_millis(300);
    let out = Local::run(2, timeout, |c| {
        if c.rank() == 1 {
            std::thread::sleep(Duration::from_millis(900));
            return Ok(Duration::ZERO);
        }
        let start = Instant::now();
        let e = c.recv(1, 5, "a test message").unwrap_err();
        assert!(
            matches!(
                e,
                CommError::Timeout {
                    rank: 0,
                    peer: 1,
                    tag: 5,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("rank 1 died or is stuck"), "{e}");
        Ok::<_, CommError>(start.elapsed())
    });
    let waited = out[0].as_ref().unwrap().as_ref().unwrap();
    assert!(*waited >= timeout && *waited < timeout * 3, "{waited:?}");
    // Rank 1 panics: rank 0 hears it is gone well before its (long) timeout.
    let out = Local::run(2, Duration::from_secs(60), |c| {
        if c.rank() == 1 {
            panic!("a rank that fails");
        }
        let start = Instant::now();
        let e = c.recv(1, 9, "a halo").unwrap_err();
        assert!(
            matches!(
                e,
                CommError::Gone {
                    peer: 1,
                    tag: 9,
                    ..
                }
            ),
            "{e}"
        );
        Ok::<_, CommError>(start.elapsed())
    });
    assert!(
        out[1]
            .as_ref()
            .is_err_and(|p| p.contains("a rank that fails"))
    );
    let waited = out[0].as_ref().unwrap().as_ref().unwrap();
    assert!(*waited < Duration::from_secs(5), "{waited:?}");
}

#[test]
fn bad_plans_and_ranks_are_errors_not_panics() {
    let out = on(2, |c| {
        let bad_entry = HaloPlan {
            neighbours: vec![Neighbour {
                rank: 1 - c.rank(),
                send: vec![9],
                recv: vec![],
            }],
        };
        let a = exchange_halo(c, &bad_entry, &mut [0u32; 4]).is_err();
        let own = HaloPlan {
            neighbours: vec![Neighbour {
                rank: c.rank(),
                ..Neighbour::default()
            }],
        };
        let b = exchange_halo(c, &own, &mut [0u32; 4]).is_err();
        let d = c.send(7, 1, &[]).is_err() && c.recv(7, 1, "x").is_err();
        let e = broadcast(c, 2, &mut Vec::new()).is_err();
        let f = migrate(c, vec![(5usize, 1u32)]).is_err();
        let twice = HaloPlan {
            neighbours: vec![Neighbour::default(), Neighbour::default()]
                .into_iter()
                .map(|n| Neighbour {
                    rank: 1 - c.rank(),
                    ..n
                })
                .collect(),
        };
        let g = exchange_halo(c, &twice, &mut [0u32; 4]).is_err();
        let h = c.send(1 - c.rank(), MAX_TAG + 1, &[]).is_err()
            && c.recv(1 - c.rank(), u32::MAX, "x").is_err();
        Ok([a, b, d, e, f, g, h])
    });
    assert!(out.iter().all(|r| r.iter().all(|&x| x)), "{out:?}");
}

#[test]
fn a_launcher_is_recognised_and_a_build_without_mpi_says_so() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(launcher_in(env(&[])), None);
    assert_eq!(
        launcher_in(env(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "3")
        ])),
        Some((2, Some(3)))
    );
    assert_eq!(
        launcher_in(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "4")])),
        Some((0, Some(4)))
    );
    // PMIx alone (as `srun --mpi=pmix` starts it): the size from Slurm, else unknown, and
    // then taken as several ranks.
    assert_eq!(
        launcher_in(env(&[("PMIX_RANK", "3"), ("SLURM_NTASKS", "4")])),
        Some((3, Some(4)))
    );
    assert_eq!(launcher_in(env(&[("PMIX_RANK", "0")])), Some((0, None)));
    let unknown = CommError::NoMpi {
        rank: 0,
        size: None,
    }
    .to_string();
    assert!(unknown.contains("rank 0 of several"), "{unknown}");
    let message = CommError::NoMpi {
        rank: 1,
        size: Some(2),
    }
    .to_string();
    assert!(message.contains("built without MPI") && message.contains("--features mpi"));
}
