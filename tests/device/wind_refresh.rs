//! The wind's ground refresh (issue 28 item 5) on PoCL: the device's regraded geometry against
//! a solver set up afresh on the regraded mesh (whose tables the host computes), zero change,
//! a snow bump's re-projection, and a rollback from an inverted tetrahedron.

use snowsim::meshio::Mesh;
use snowsim::scene::{Scene, Wind};
use snowsim::terrain::Columns;
use snowsim::wind::refresh::DeviceTables;
use snowsim::wind::{Settings, Solver, WindError};

use crate::common::context;

/// The valley scene's terrain and wind on a coarse mesh (12 × 12 cells, 5 layers: ~1 000
/// vertices), renumbered as the simulation's.
fn valley() -> (Scene, Mesh, snowsim::scene::BoundaryRefs, Columns) {
    let dir = crate::common::temp_dir("wind_refresh", "valley");
    let scene = crate::common::coarse_valley(&dir, 12, 5);
    let domain = scene.build_domain(true).unwrap();
    let columns = domain.columns.expect("a terrain has columns");
    (scene, domain.mesh, domain.boundary, columns)
}

/// The profile at every vertex by its height above its column's ground, as the refresh
/// samples it (in double, from the vertices' own heights).
fn profile(columns: &Columns, z: &[f64], wind: &Wind) -> Vec<[f32; 4]> {
    let mut ground = vec![0.0; columns.ground.len()];
    for (v, (&c, &k)) in columns.column.iter().zip(&columns.level).enumerate() {
        if k == 0 {
            ground[c as usize] = z[v];
        }
    }
    z.iter()
        .zip(&columns.column)
        .map(|(&z, &c)| {
            let [x, y, w] = wind.velocity_at((z - ground[c as usize]).max(0.0));
            [x as f32, y as f32, w as f32, 0.0]
        })
        .collect()
}

/// A solver on `mesh` with its vertices at heights `z`, the profile sampled as the refresh
/// does, and the columns attached.
fn solver_at(
    scene: &Scene,
    mesh: &Mesh,
    sides: &snowsim::scene::BoundaryRefs,
    columns: &Columns,
    z: &[f64],
    settings: Settings,
) -> Solver {
    let mut mesh = mesh.clone();
    for (p, &z) in mesh.vertices.iter_mut().zip(z) {
        p[2] = z;
    }
    let inflow = profile(columns, z, &scene.wind);
    let mut solver = Solver::new(
        context(),
        &mesh,
        sides,
        scene.wind.direction,
        &inflow,
        settings,
    )
    .expect("the wind solver sets up");
    if z == columns.regrade(&vec![0.0; columns.ground.len()]).unwrap().z {
        solver
            .set_ground_columns(columns.clone(), scene.wind)
            .expect("the columns are the mesh's");
    }
    solver
}

fn settings(scene: &Scene, assemble_operator: bool) -> Settings {
    Settings {
        iterations: 200,
        assemble_operator,
        ..snowsim::wind::setup::settings(scene, false)
    }
}

/// A bump of snow: up to `height` m on the columns near the grid's middle, none elsewhere.
fn bump(columns: &Columns, mesh: &Mesh, height: f64) -> Vec<f64> {
    let mut raise = vec![0.0; columns.ground.len()];
    let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
    for p in &mesh.vertices {
        for a in 0..2 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    let mid = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
    let radius = (hi[0] - lo[0]) / 5.0;
    for (v, (&c, &k)) in columns.column.iter().zip(&columns.level).enumerate() {
        if k == 0 {
            let p = mesh.vertices[v];
            let r2 = ((p[0] - mid[0]).powi(2) + (p[1] - mid[1]).powi(2)) / (radius * radius);
            if r2 < 1.0 {
                raise[c as usize] = height * (1.0 - r2);
            }
        }
    }
    assert!(raise.iter().filter(|&&d| d > 0.0).count() >= 4);
    raise
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

/// The refreshed tables against a fresh solver's: the coordinates, the coefficients, the
/// projectors, the inflow fluxes and profile, and the assembled rows bit for bit (the device
/// computes the coefficients with contraction off in the host's order, and the rows and lumped
/// volumes sum in the host's ball order); `1/m` within 1 ulp of f32 (a sum in double rounded to
/// f32); the inverse diagonal within a relative 1e-6 (3e-8 seen on PoCL: the device applies
/// the f32 projectors `Bnd` holds, the host its f64 ones).
fn assert_tables_match(refreshed: &DeviceTables, fresh: &DeviceTables) {
    assert_eq!(refreshed.coordinates, fresh.coordinates, "VerCrd");
    assert_eq!(refreshed.flags, fresh.flags, "Flg");
    assert_eq!(refreshed.inflow, fresh.inflow, "Inf");
    for (t, (a, b)) in refreshed
        .coefficients
        .iter()
        .zip(&fresh.coefficients)
        .enumerate()
    {
        assert_eq!(
            a.map(f32::to_bits),
            b.map(f32::to_bits),
            "Cof of tetrahedron {t}"
        );
    }
    for (v, (a, b)) in refreshed.boundary.iter().zip(&fresh.boundary).enumerate() {
        for lane in [0, 1, 2, 3, 4, 5, 7] {
            assert_eq!(a[lane].to_bits(), b[lane].to_bits(), "Bnd.s{lane} at {v}");
        }
        let ulps = (a[6].to_bits() as i64 - b[6].to_bits() as i64).abs();
        assert!(ulps <= 1, "1/m at {v}: {} against {}", a[6], b[6]);
    }
    let mut worst: f64 = 0.0;
    for (v, (a, b)) in refreshed
        .inverse_diagonal
        .iter()
        .zip(&fresh.inverse_diagonal)
        .enumerate()
    {
        assert!(relative(*a, *b) <= 1e-6, "Dia at {v}: {a} against {b}");
        worst = worst.max(relative(*a, *b));
    }
    eprintln!("Dia: largest relative difference {worst:.2e}");
    match (
        (&refreshed.grad_rows, &refreshed.div_rows),
        (&fresh.grad_rows, &fresh.div_rows),
    ) {
        ((Some(g), Some(d)), (Some(fg), Some(fd))) => {
            let n = refreshed.coordinates.len();
            for (name, a, b) in [("Gel", g, fg), ("Del", d, fd)] {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    assert_eq!(
                        x.map(f32::to_bits),
                        y.map(f32::to_bits),
                        "{name} slot {} of vertex {}: {x:?} against {y:?}",
                        i / n,
                        i % n
                    );
                }
            }
        }
        ((None, None), (None, None)) => {}
        _ => panic!("one solver assembled, the other not"),
    }
}

fn refreshed_geometry_matches_a_fresh_solver(assemble_operator: bool) {
    let (scene, mesh, sides, columns) = valley();
    let bare = columns.regrade(&vec![0.0; columns.ground.len()]).unwrap().z;
    let settings = settings(&scene, assemble_operator);
    let mut solver = solver_at(&scene, &mesh, &sides, &columns, &bare, settings);
    assert_eq!(solver.operator_assembled(), assemble_operator);
    solver.startup().unwrap();
    let raise = bump(&columns, &mesh, 4.0);
    let stats = solver.refresh_ground(&raise).unwrap();
    assert!(!stats.skipped && stats.columns_changed >= 4, "{stats:?}");
    let z = columns.regrade(&raise).unwrap().z;
    let mut fresh = solver_at(&scene, &mesh, &sides, &columns, &z, settings);
    assert_tables_match(
        &solver.device_tables().unwrap(),
        &fresh.device_tables().unwrap(),
    );
    assert!(relative(solver.volume(), fresh.volume()) < 1e-12);
    assert!(relative(stats.volume, fresh.volume()) < 1e-12);
    // The host's mirror of the boundary (computed when asked) is the fresh solver's.
    let (moved, new) = (solver.boundary(), fresh.boundary());
    assert_eq!(moved.projector, new.projector);
    assert_eq!(moved.inflow_flux, new.inflow_flux);
    assert_eq!(moved.triangle_normals, new.triangle_normals);
    assert_eq!(moved.flags, new.flags);
    for (m, f) in moved.references.iter().zip(&new.references) {
        assert_eq!((m.reference, m.kind, m.area), (f.reference, f.kind, f.area));
        assert_eq!(m.normal, f.normal);
    }
    let vertices: Vec<[f64; 3]> = solver.vertices().to_vec();
    assert_eq!(vertices, fresh.vertices());
    // The whole operator: A p of both solvers for the same p.
    let p: Vec<f64> = (0..vertices.len())
        .map(|i| ((i * 7919) % 101) as f64 / 101.0 - 0.5)
        .collect();
    let (a, b) = (
        solver.apply_operator(&p).unwrap(),
        fresh.apply_operator(&p).unwrap(),
    );
    let scale = b.iter().map(|x| x.abs()).fold(0.0, f64::max);
    for (v, (a, b)) in a.iter().zip(&b).enumerate() {
        assert!((a - b).abs() <= 1e-9 * scale, "A p at {v}: {a} against {b}");
    }
}

#[test]
fn refreshed_geometry_matches_a_fresh_solver_assembled() {
    refreshed_geometry_matches_a_fresh_solver(true);
}

#[test]
fn refreshed_geometry_matches_a_fresh_solver_matrix_free() {
    refreshed_geometry_matches_a_fresh_solver(false);
}

/// Every column raised, by an uneven 0 to 2 m: the inflow sides' vertices move, so the inflow
/// fluxes (`Bnd.s7`) and the inflow sides' projectors change too, and the device's equal a
/// fresh solver's bit for bit (the bump above leaves the inflow sides where they were).
#[test]
fn refreshed_inflow_fluxes_match_a_fresh_solver() {
    let (scene, mesh, sides, columns) = valley();
    let bare = columns.regrade(&vec![0.0; columns.ground.len()]).unwrap().z;
    let settings = settings(&scene, false);
    let mut solver = solver_at(&scene, &mesh, &sides, &columns, &bare, settings);
    let before = solver.device_tables().unwrap();
    let raise: Vec<f64> = (0..columns.ground.len())
        .map(|c| ((c * 7) % 5) as f64 * 0.5)
        .collect();
    let stats = solver.refresh_ground(&raise).unwrap();
    assert!(!stats.skipped, "{stats:?}");
    let z = columns.regrade(&raise).unwrap().z;
    let mut fresh = solver_at(&scene, &mesh, &sides, &columns, &z, settings);
    let (refreshed, new) = (
        solver.device_tables().unwrap(),
        fresh.device_tables().unwrap(),
    );
    assert_tables_match(&refreshed, &new);
    assert!(
        before
            .boundary
            .iter()
            .zip(&refreshed.boundary)
            .any(|(a, b)| a[7] != 0.0 && a[7] != b[7]),
        "no inflow flux changed"
    );
    assert_eq!(solver.boundary().inflow_flux, fresh.boundary().inflow_flux);
    assert_eq!(solver.boundary().projector, fresh.boundary().projector);
}

/// Everything the refresh could touch, as read back, as bits (the operator's padding entries
/// are NaN as floats).
fn state(solver: &mut Solver) -> Vec<u64> {
    let t = solver.device_tables().unwrap();
    let f32s = |v: &mut Vec<u64>, x: &[f32]| v.extend(x.iter().map(|x| u64::from(x.to_bits())));
    let mut bits: Vec<u64> = solver
        .vertices()
        .iter()
        .flatten()
        .map(|x| x.to_bits())
        .collect();
    f32s(&mut bits, solver.velocity().unwrap().as_flattened());
    f32s(&mut bits, &solver.pressure().unwrap());
    f32s(&mut bits, t.coordinates.as_flattened());
    f32s(&mut bits, t.coefficients.as_flattened());
    f32s(&mut bits, t.boundary.as_flattened());
    f32s(&mut bits, t.inflow.as_flattened());
    bits.extend(t.inverse_diagonal.iter().map(|x| x.to_bits()));
    bits.extend(t.flags.iter().map(|&x| x as u64));
    for rows in [&t.grad_rows, &t.div_rows].into_iter().flatten() {
        f32s(&mut bits, rows.as_flattened());
    }
    bits
}

/// The valley's solver with the assembled operator on its bare ground, after its start-up
/// solve; with its mesh, columns and bare heights.
fn started_on_bare() -> (Mesh, Columns, Vec<f64>, Solver) {
    let (scene, mesh, sides, columns) = valley();
    let bare = columns.regrade(&vec![0.0; columns.ground.len()]).unwrap().z;
    let mut solver = solver_at(
        &scene,
        &mesh,
        &sides,
        &columns,
        &bare,
        settings(&scene, true),
    );
    solver.startup().unwrap();
    (mesh, columns, bare, solver)
}

#[test]
fn zero_change_leaves_everything_bit_for_bit() {
    let (mesh, columns, _, mut solver) = started_on_bare();
    solver.step().unwrap();
    let before = state(&mut solver);
    let stats = solver
        .refresh_ground(&vec![0.0; columns.ground.len()])
        .unwrap();
    assert!(stats.skipped && stats.columns_changed == 0, "{stats:?}");
    assert!(
        state(&mut solver) == before,
        "a zero refresh changed the state"
    );
    // Raised, then the same raise again: the second one changes nothing.
    let raise = bump(&columns, &mesh, 2.0);
    assert!(!solver.refresh_ground(&raise).unwrap().skipped);
    let raised = state(&mut solver);
    assert!(solver.refresh_ground(&raise).unwrap().skipped);
    assert!(
        state(&mut solver) == raised,
        "a repeated refresh changed the state"
    );
}

/// The refresh's device data made ahead (`prepare_ground_refresh`, as a simulation with
/// refreshes on does at set-up) change nothing: a refresh after them leaves the same state, bit
/// for bit, as one that makes them itself; preparing twice is harmless.
#[test]
fn preparing_the_refresh_ahead_changes_nothing() {
    let (mesh, columns, _, mut late) = started_on_bare();
    let (_, _, _, mut early) = started_on_bare();
    early.prepare_ground_refresh().unwrap();
    early.prepare_ground_refresh().unwrap();
    let raise = bump(&columns, &mesh, 3.0);
    for solver in [&mut late, &mut early] {
        solver.step().unwrap();
        assert!(!solver.refresh_ground(&raise).unwrap().skipped);
        solver.step().unwrap();
    }
    assert!(
        state(&mut early) == state(&mut late),
        "preparing ahead changed the refresh"
    );
}

/// A refresh in two halves (the plan made on another thread while the solver steps on, then
/// applied) leaves the same state, bit for bit, as one done at once at the same step; a plan
/// made before an earlier refresh still fits after it (it holds only the bare ground's data),
/// and its raise is the one it was made from.
#[test]
fn a_plan_made_on_another_thread_applies_as_a_refresh_at_once() {
    let (mesh, columns, _, mut at_once) = started_on_bare();
    let (_, _, _, mut halves) = started_on_bare();
    let first = bump(&columns, &mesh, 3.0);
    let second = bump(&columns, &mesh, 5.0);
    let planner = halves.ground_planner().unwrap();
    let thread = {
        let (planner, second) = (planner.clone(), second.clone());
        std::thread::spawn(move || planner.plan(&second).unwrap())
    };
    let mut first_plan = planner.plan(&first).unwrap();
    for solver in [&mut at_once, &mut halves] {
        solver.step().unwrap();
    }
    assert!(!at_once.refresh_ground(&first).unwrap().skipped);
    assert!(!halves.apply_ground(&mut first_plan).unwrap().skipped);
    let mut second_plan = thread.join().unwrap();
    assert_eq!(second_plan.raise(), &second[..]);
    for solver in [&mut at_once, &mut halves] {
        solver.step().unwrap();
    }
    assert!(!at_once.refresh_ground(&second).unwrap().skipped);
    assert!(!halves.apply_ground(&mut second_plan).unwrap().skipped);
    halves.step().unwrap();
    at_once.step().unwrap();
    assert_eq!(halves.vertices(), at_once.vertices());
    assert!(
        state(&mut halves) == state(&mut at_once),
        "the refresh in halves differs from the refresh at once"
    );
    // Applied again, the same plan changes nothing.
    assert!(halves.apply_ground(&mut second_plan).unwrap().skipped);
    // A plan of another solver's planner is refused, nothing changed.
    let mut foreign = at_once.ground_planner().unwrap().plan(&first).unwrap();
    let err = halves.apply_ground(&mut foreign).unwrap_err();
    assert!(err.to_string().contains("another solver"), "{err}");
    assert_eq!(halves.vertices(), at_once.vertices());
    // Back on the bare ground, the inflow profile is set-up's again, bit for bit (a column
    // back on its bare ground takes the bare inflow, not one sampled anew).
    let (_, _, _, mut bare) = started_on_bare();
    let mut flat = planner.plan(&vec![0.0; second.len()]).unwrap();
    assert!(!halves.apply_ground(&mut flat).unwrap().skipped);
    let (refreshed, fresh) = (
        halves.device_tables().unwrap(),
        bare.device_tables().unwrap(),
    );
    assert_eq!(halves.vertices(), bare.vertices());
    assert!(
        refreshed.inflow == fresh.inflow,
        "the bare inflow is not set-up's"
    );
}

#[test]
fn a_snow_bump_is_projected_divergence_free() {
    let (mesh, columns, _, mut solver) = started_on_bare();
    for _ in 0..5 {
        solver.step().unwrap();
    }
    let inflow: f64 = -solver
        .fluxes()
        .unwrap()
        .iter()
        .filter(|f| f.1 < 0.0)
        .map(|f| f.1)
        .sum::<f64>();
    let raise = bump(&columns, &mesh, 5.0);
    let stats = solver.refresh_ground(&raise).unwrap();
    eprintln!("snow bump refresh on PoCL: {stats:?}");
    assert!(stats.converged, "{stats:?}");
    assert!(
        stats.divergence_after <= solver.absolute_tolerance(),
        "divergence {} above the tolerance {}",
        stats.divergence_after,
        solver.absolute_tolerance()
    );
    assert!(
        stats.divergence_before > stats.divergence_after,
        "the carried-over field was already divergence-free on the new mesh: {stats:?}"
    );
    let net: f64 = solver.fluxes().unwrap().iter().map(|f| f.1).sum();
    assert!(
        net.abs() < 0.01 * inflow,
        "net boundary flux {net} m³/s against an inflow of {inflow} m³/s"
    );
    // The ground vertices stand on the raised ground; the wind steps on.
    for (v, (&c, &k)) in columns.column.iter().zip(&columns.level).enumerate() {
        if k == 0 {
            assert_eq!(
                solver.vertices()[v][2],
                columns.ground[c as usize] + raise[c as usize]
            );
        }
    }
    for _ in 0..5 {
        let s = solver.step().unwrap();
        assert!(s.converged, "{s:?}");
    }
    // A second, deeper bump: the device data are set up, this is a refresh's running cost.
    let stats = solver.refresh_ground(&bump(&columns, &mesh, 8.0)).unwrap();
    eprintln!("second refresh on PoCL: {stats:?}");
    assert!(stats.converged && stats.divergence_after <= solver.absolute_tolerance());
}

#[test]
fn an_inverted_tetrahedron_is_refused_and_rolled_back() {
    let (mesh, columns, bare, mut solver) = started_on_bare();
    solver.step().unwrap();
    let before = state(&mut solver);
    // A level-1 vertex pushed below its column's ground: its tetrahedra invert.
    let mut z = bare.clone();
    let v = columns.level.iter().position(|&k| k == 1).unwrap();
    let c = columns.column[v];
    let ground = columns
        .column
        .iter()
        .zip(&columns.level)
        .position(|(&cc, &k)| cc == c && k == 0)
        .unwrap();
    z[v] = bare[ground] - 1.0;
    match solver.refresh_heights(&z) {
        Err(WindError::BadGeometry { tets, first }) => {
            assert!(tets > 0, "{first}");
            assert!(
                first.contains("inverted") || first.contains("degenerate"),
                "{first}"
            );
        }
        other => panic!("an inverted tetrahedron gave {other:?}"),
    }
    assert!(
        state(&mut solver) == before,
        "a refused refresh changed the state"
    );
    // A degenerate one: the level-1 vertex on the ground.
    z[v] = bare[ground];
    assert!(matches!(
        solver.refresh_heights(&z),
        Err(WindError::BadGeometry { .. })
    ));
    assert!(
        state(&mut solver) == before,
        "a refused refresh changed the state"
    );
    // The solver goes on: a valid refresh and a step.
    let stats = solver.refresh_ground(&bump(&columns, &mesh, 2.0)).unwrap();
    assert!(stats.converged, "{stats:?}");
    assert!(solver.step().unwrap().converged);
}

#[test]
fn a_refresh_without_columns_or_with_bad_input_is_an_error() {
    let (scene, mesh, sides, columns) = valley();
    let bare = columns.regrade(&vec![0.0; columns.ground.len()]).unwrap().z;
    let mut raised = bare.clone();
    raised[0] += 1e-3;
    // Set up off the columns' heights: no columns attached.
    let mut solver = solver_at(
        &scene,
        &mesh,
        &sides,
        &columns,
        &raised,
        settings(&scene, true),
    );
    assert!(!solver.has_ground_columns());
    let none = vec![0.0; columns.ground.len()];
    assert!(matches!(
        solver.refresh_ground(&none),
        Err(WindError::Refresh(_))
    ));
    assert!(matches!(
        solver.prepare_ground_refresh(),
        Err(WindError::Refresh(_))
    ));
    // Columns that are not the mesh's are refused.
    assert!(matches!(
        solver.set_ground_columns(columns.clone(), scene.wind),
        Err(WindError::Refresh(_))
    ));
    let mut solver = solver_at(
        &scene,
        &mesh,
        &sides,
        &columns,
        &bare,
        settings(&scene, true),
    );
    assert!(matches!(
        solver.refresh_ground(&none[1..]),
        Err(WindError::Refresh(_))
    ));
    let mut bad = none.clone();
    bad[2] = -1.0;
    assert!(matches!(
        solver.refresh_ground(&bad),
        Err(WindError::Refresh(_))
    ));
    let mut z = bare.clone();
    z[1] = f64::NAN;
    assert!(matches!(
        solver.refresh_heights(&z),
        Err(WindError::Refresh(_))
    ));
    assert!(matches!(
        solver.refresh_heights(&z[1..]),
        Err(WindError::Refresh(_))
    ));
}

/// Timing harness, not a check (`cargo test --release --test device -- --ignored
/// valley_refresh_timings --nocapture`): builds the full valley scene's wind solver
/// (`scenes/valley.toml`: ~198 000 vertices, 1.1 M tetrahedra; ~10 s in release on PoCL with
/// 2 cores), raises every column by 5 cm, then 10, 15, 20, 25 and 30 cm, and prints each
/// refresh's phase times ([`snowsim::wind::refresh::RefreshTimes`]); the first refresh
/// includes the set-up of the refresh's device data, the later ones are its running cost.
#[test]
#[ignore = "a timing harness on the full valley mesh (run it in release)"]
fn valley_refresh_timings() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = Scene::load(&root.join("scenes/valley.toml")).unwrap();
    let settings = Settings {
        startup_iterations: 5,
        ..snowsim::wind::setup::settings(&scene, false)
    };
    let started = std::time::Instant::now();
    let mut solver = snowsim::wind::setup::from_scene(context(), &scene, settings).unwrap();
    let columns = solver.ground_columns().expect("the valley has columns");
    eprintln!(
        "valley: {} vertices, {} columns, set up in {:.1} s",
        solver.vertices().len(),
        columns,
        started.elapsed().as_secs_f64()
    );
    for (i, raise) in [0.05, 0.10, 0.15, 0.20, 0.25, 0.30].into_iter().enumerate() {
        let stats = solver.refresh_ground(&vec![raise; columns]).unwrap();
        assert!(!stats.skipped);
        eprintln!("refresh {i} (+{raise} m): {:?}", stats.times);
    }
}
