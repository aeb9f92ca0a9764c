//! gml's reductions against an f64 CPU reference written here: every operator over f32, f64
//! and i32 fields of widths 1, 2, 4 (and 16), per component and over norms, on odd lengths;
//! NaN and infinities; the precision of float sums; results left on the device.

use snowsim::cl;
use snowsim::gml::{
    Gml, GmlError, MeshKind, Parameters, ReduceLayout, ReduceOptions, Reducible, Reduction,
    Solution, VectorMode,
};

use crate::common::{Capability, gml, skip};

/// The lengths tested, each on a mesh kind of its own so that one instance holds them all.
const LENGTHS: [(MeshKind, usize); 4] = [
    (MeshKind::Tetrahedra, 1),
    (MeshKind::Triangles, 3),
    (MeshKind::Edges, 1023),
    (MeshKind::Vertices, (1 << 20) + 7),
];

const MODES: [VectorMode; 2] = [VectorMode::PerComponent, VectorMode::Norm];

/// A deterministic pseudo-random sequence (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// A sum accurate to about an ulp (Neumaier), so that the reference's own rounding does not
/// count against the device.
fn accurate_sum(values: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for x in values {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    if s.is_finite() { s + c } else { s }
}

/// The Euclidean norm, as IEEE's hypot: infinite if a component is, else NaN if one is.
fn norm(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_infinite()) {
        f64::INFINITY
    } else if v.iter().any(|x| x.is_nan()) {
        f64::NAN
    } else {
        accurate_sum(v.iter().map(|x| x * x)).sqrt()
    }
}

/// One operator over `v`, in f64, NaN-propagating for min, max and L∞.
fn reduce_cpu(v: &[f64], op: Reduction) -> f64 {
    let has_nan = v.iter().any(|x| x.is_nan());
    match op {
        Reduction::Min if has_nan => f64::NAN,
        Reduction::Max | Reduction::Linf if has_nan => f64::NAN,
        Reduction::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
        Reduction::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Reduction::Linf => v.iter().map(|x| x.abs()).fold(0.0, f64::max),
        Reduction::Sum => accurate_sum(v.iter().copied()),
        Reduction::L0 => v.iter().filter(|&&x| x != 0.0).count() as f64,
        Reduction::L1 => accurate_sum(v.iter().map(|x| x.abs())),
        Reduction::L2 => accurate_sum(v.iter().map(|x| x * x)).sqrt(),
    }
}

/// The values a reduction runs over: each component, or the norm of each vector.
fn columns(values: &[f64], width: usize, mode: VectorMode) -> Vec<Vec<f64>> {
    match mode {
        VectorMode::PerComponent => (0..width)
            .map(|c| values.iter().skip(c).step_by(width).copied().collect())
            .collect(),
        VectorMode::Norm => vec![values.chunks(width).map(norm).collect()],
    }
}

/// Asserts `got` matches `want` within `tol` relative to the column's scale (exact for
/// min, max, L∞ and L0 per component; NaN and infinities exactly).
fn check(got: f64, want: f64, column: &[f64], op: Reduction, tol: f64, what: &str) {
    if want.is_nan() {
        assert!(got.is_nan(), "{what}: {got}, expected NaN");
        return;
    }
    if want.is_infinite() {
        assert_eq!(got, want, "{what}");
        return;
    }
    let scale = match op {
        Reduction::Sum | Reduction::L1 => column.iter().map(|x| x.abs()).sum(),
        _ => want.abs(),
    };
    assert!(
        (got - want).abs() <= tol * scale,
        "{what}: {got} vs {want} (difference {:e}, scale {scale:e})",
        got - want
    );
}

/// Reduces `values` (lines × width scalars of `S`) on the device as a field of `T`, with every
/// operator and mode, and checks each result against the CPU.
fn check_field<S, T>(
    g: &mut Gml,
    kind: MeshKind,
    name: &str,
    values: &[S],
    tolerance: impl Fn(Reduction, VectorMode) -> f64,
) where
    S: bytemuck::Pod + Into<f64>,
    T: Reducible,
{
    let width = T::TYPE.width;
    let field: Solution<T> = g.new_solution(kind, 1, name).unwrap();
    g.set_block(field, 0, bytemuck::cast_slice(values)).unwrap();
    let flat: Vec<f64> = values.iter().map(|&x| x.into()).collect();
    for mode in MODES {
        let columns = columns(&flat, width, mode);
        for op in Reduction::ALL {
            let got = g.reduce_vector(field, op, mode).unwrap();
            assert_eq!(got.len(), columns.len());
            for (c, (got, column)) in got.iter().zip(&columns).enumerate() {
                let what = format!(
                    "{} × {} {op:?} {mode:?} component {c} of {name}",
                    flat.len() / width,
                    T::TYPE
                );
                let want = reduce_cpu(column, op);
                check(*got, want, column, op, tolerance(op, mode), &what);
            }
        }
    }
    g.free(field).unwrap();
}

/// Dispatches on the width: the field type is `S` or `[S; width]`.
fn check_width<S>(
    g: &mut Gml,
    kind: MeshKind,
    width: usize,
    values: &[S],
    tolerance: &impl Fn(Reduction, VectorMode) -> f64,
) where
    S: bytemuck::Pod + Into<f64> + Reducible,
    [S; 2]: Reducible,
    [S; 4]: Reducible,
    [S; 16]: Reducible,
{
    let name = format!("W{width}");
    match width {
        1 => check_field::<S, S>(g, kind, &name, values, tolerance),
        2 => check_field::<S, [S; 2]>(g, kind, &name, values, tolerance),
        4 => check_field::<S, [S; 4]>(g, kind, &name, values, tolerance),
        16 => check_field::<S, [S; 16]>(g, kind, &name, values, tolerance),
        _ => unreachable!("width {width}"),
    }
}

/// How a reduction may run: the layout of its first pass, and whether the partials are folded
/// in a second launch (else by the last work-group of one launch). The device's default is
/// only one of them.
#[derive(Clone, Copy, Debug)]
struct Form {
    layout: ReduceLayout,
    two_passes: bool,
}

/// Every layout in one launch, and the GPU layout in two (the second launch is the same
/// kernel code for both layouts).
const FORMS: [Form; 3] = [
    Form {
        layout: ReduceLayout::GridStride,
        two_passes: false,
    },
    Form {
        layout: ReduceLayout::Contiguous,
        two_passes: false,
    },
    Form {
        layout: ReduceLayout::GridStride,
        two_passes: true,
    },
];

/// Options of `form`, and float accumulators when `float`.
fn options(form: Form, float: bool) -> ReduceOptions {
    ReduceOptions {
        float_accumulators: float,
        layout: Some(form.layout),
        two_passes: form.two_passes,
        groups_per_unit: None,
    }
}

/// An instance with a mesh of every tested length.
fn instance() -> Gml {
    let mut g = gml();
    for (kind, n) in LENGTHS {
        g.new_mesh(kind, n).unwrap();
    }
    g
}

/// Every length, widths 1, 2 and 4, values from `value(index)`.
fn check_type<S>(g: &mut Gml, value: impl Fn(&mut Rng, usize) -> S, tol: f64)
where
    S: bytemuck::Pod + Into<f64> + Reducible,
    [S; 2]: Reducible,
    [S; 4]: Reducible,
    [S; 16]: Reducible,
{
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (kind, n) in LENGTHS {
        for width in [1, 2, 4] {
            let values: Vec<S> = (0..n * width).map(|i| value(&mut rng, i)).collect();
            for form in FORMS {
                g.set_reduce_options(options(form, false));
                check_width(g, kind, width, &values, &|_, _| tol);
            }
        }
    }
}

/// Floats of mixed signs and magnitudes, with zeros (for L0).
fn float_value(rng: &mut Rng, i: usize) -> f64 {
    if i % 7 == 3 {
        0.0
    } else {
        rng.unit() * 10f64.powi((i % 9) as i32 - 4)
    }
}

#[test]
fn f32_fields_match_the_cpu() {
    let mut g = instance();
    let tol = if g.has_fp64() { 1e-12 } else { 1e-6 };
    check_type(&mut g, |rng, i| float_value(rng, i) as f32, tol);
}

#[test]
fn f64_fields_match_the_cpu() {
    let mut g = instance();
    if !g.has_fp64() {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", g.device().label()),
        );
        return;
    }
    check_type(&mut g, float_value, 1e-12);
}

#[test]
fn i32_fields_match_the_cpu_and_integer_sums_are_exact() {
    let mut g = instance();
    // Sums of up to 2^22 values below 2^31 stay below 2^53: the f64 reference is exact, and
    // so must the device's be (only L2 and norms round).
    let tol = if g.has_fp64() { 1e-12 } else { 1e-6 };
    let value = |rng: &mut Rng, i: usize| match i % 11 {
        1 => i32::MIN,
        2 => i32::MAX,
        5 => 0,
        _ => (rng.unit() * 1e9) as i32,
    };
    let mut rng = Rng(7);
    for (kind, n) in LENGTHS {
        for width in [1, 2, 4] {
            let values: Vec<i32> = (0..n * width).map(|i| value(&mut rng, i)).collect();
            let exact = |op: Reduction, mode: VectorMode| match (op, mode) {
                (Reduction::L2, _) | (_, VectorMode::Norm) => tol,
                _ => 0.0,
            };
            for form in FORMS {
                g.set_reduce_options(options(form, false));
                check_width(&mut g, kind, width, &values, &exact);
            }
        }
    }
    // A sum far beyond i32 and f32: (2^31 − 1) · (2^20 + 7).
    let n = LENGTHS[3].1;
    let big = g.new_solution::<i32>(MeshKind::Vertices, 1, "Big").unwrap();
    g.set_block(big, 0, &vec![i32::MAX; n]).unwrap();
    assert_eq!(
        g.reduce(big, Reduction::Sum).unwrap(),
        f64::from(i32::MAX) * n as f64
    );
    assert_eq!(
        g.reduce(big, Reduction::L0).unwrap(),
        n as f64,
        "every line counts"
    );
}

#[test]
fn sixteen_wide_vectors_match_the_cpu() {
    let mut g = instance();
    let tol = 1e-12_f64.max(if g.has_fp64() { 0.0 } else { 1e-6 });
    let mut rng = Rng(3);
    for (kind, n) in LENGTHS {
        let values: Vec<f32> = (0..n * 16)
            .map(|i| float_value(&mut rng, i) as f32)
            .collect();
        for form in FORMS {
            g.set_reduce_options(options(form, false));
            check_width(&mut g, kind, 16, &values, &|_, _| tol);
        }
        g.set_reduce_options(ReduceOptions::default());
        if g.has_fp64() {
            let values: Vec<f64> = (0..n * 16).map(|i| float_value(&mut rng, i)).collect();
            check_width(&mut g, kind, 16, &values, &|_, _| tol);
        }
        let values: Vec<i32> = (0..n * 16).map(|i| (i as i32 % 1001) - 500).collect();
        check_width(&mut g, kind, 16, &values, &|_, _| tol);
    }
}

/// Arrays holding NaN and infinities at the first, a middle and the last line (the tail);
/// only at the last for long arrays.
fn special_arrays(n: usize, width: usize) -> Vec<(String, Vec<f64>)> {
    let base = |i: usize| ((i * 37 % 101) as f64 - 50.0) / 8.0;
    let mut cases = Vec::new();
    let last = n * width - 1;
    for (label, specials) in [
        ("NaN", vec![f64::NAN]),
        ("+inf", vec![f64::INFINITY]),
        ("-inf", vec![f64::NEG_INFINITY]),
        ("+inf and -inf", vec![f64::INFINITY, f64::NEG_INFINITY]),
        ("NaN and +inf", vec![f64::NAN, f64::INFINITY]),
    ] {
        let places = if n > 1023 {
            vec![last]
        } else {
            vec![0, n * width / 2, last]
        };
        for at in places {
            let mut v: Vec<f64> = (0..n * width).map(base).collect();
            for (k, s) in specials.iter().enumerate() {
                v[(at + k * (n * width / 3 + 1)) % (n * width)] = *s;
            }
            cases.push((format!("{label} at {at}"), v));
        }
    }
    cases
}

fn check_specials(g: &mut Gml, what: &str) {
    for (kind, n) in LENGTHS {
        for width in [1, 2] {
            for (label, values) in special_arrays(n, width) {
                let f32s: Vec<f32> = values.iter().map(|&x| x as f32).collect();
                let run = |g: &mut Gml| {
                    check_width(g, kind, width, &f32s, &|_, _| 1e-6);
                    if g.has_fp64() {
                        check_width(g, kind, width, &values, &|_, _| 1e-12);
                    }
                };
                eprintln!("{what}: {n} × {width}, {label}");
                run(g);
            }
        }
    }
}

#[test]
fn nan_and_infinities_follow_ieee() {
    let mut g = instance();
    for form in FORMS {
        g.set_reduce_options(options(form, false));
        check_specials(
            &mut g,
            &format!("{form:?}, accumulated as the device allows"),
        );
        // The compensated float path must not turn +inf into NaN.
        g.set_reduce_options(options(form, true));
        check_specials(&mut g, &format!("{form:?}, compensated float"));
    }
}

#[test]
fn float_sums_are_accumulated_in_double_or_compensated() {
    let mut g = gml();
    let n = 1 << 20;
    g.new_mesh(MeshKind::Vertices, n).unwrap();
    let values: Vec<f32> = (0..n).map(|i| 1.0 + 1e-7 * i as f32).collect();
    let field = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Ramp")
        .unwrap();
    g.set_block(field, 0, &values).unwrap();
    let want = accurate_sum(values.iter().map(|&x| f64::from(x)));
    let want_l2 = accurate_sum(values.iter().map(|&x| f64::from(x).powi(2))).sqrt();
    if g.has_fp64() {
        for form in FORMS {
            g.set_reduce_options(options(form, false));
            let got = g.reduce(field, Reduction::Sum).unwrap();
            assert!(
                ((got - want) / want).abs() <= 1e-12,
                "double, {form:?}: {got} vs {want}"
            );
            let got = g.reduce(field, Reduction::L2).unwrap();
            assert!(((got - want_l2) / want_l2).abs() <= 1e-12, "{form:?}");
        }
    }
    // Compensated float, as on devices without fp64: within a few ulps of f32.
    let ulp = f64::from(f32::EPSILON);
    for form in FORMS {
        g.set_reduce_options(options(form, true));
        let got = g.reduce(field, Reduction::Sum).unwrap();
        assert!(
            ((got - want) / want).abs() <= 4.0 * ulp,
            "compensated, {form:?}: {got} vs {want}, {:e} relative",
            (got - want) / want
        );
        let got = g.reduce(field, Reduction::L2).unwrap();
        assert!(((got - want_l2) / want_l2).abs() <= 4.0 * ulp, "{form:?}");
    }
    // A naive float sum is far off: the test would catch its absence.
    let naive = values.iter().sum::<f32>();
    assert!(((f64::from(naive) - want) / want).abs() > 100.0 * ulp);
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Scalars {
    norm: f64,
    sum: f64,
    count: f32,
    pad: f32,
}

#[test]
fn results_stay_on_the_device() {
    let mut g = instance();
    let (kind, n) = LENGTHS[2];
    let values: Vec<[f32; 4]> = (0..n)
        .map(|i| {
            let x = i as f32;
            [x, -x, 0.5 * x, if i % 3 == 0 { 0.0 } else { 1.0 }]
        })
        .collect();
    let flat: Vec<f64> = values.iter().flatten().map(|&x| f64::from(x)).collect();
    let field = g.new_solution::<[f32; 4]>(kind, 1, "Vec4").unwrap();
    g.set_block(field, 0, &values).unwrap();
    let ints = g.new_solution::<i32>(kind, 1, "Ints").unwrap();
    let int_values: Vec<i32> = (0..n as i32).map(|i| i - 500).collect();
    g.set_block(ints, 0, &int_values).unwrap();

    let mut timeline = g.context().timeline();
    let out = cl::DeviceBuffer::<f32>::zeroed(g.context(), 8).unwrap();
    g.reduce_vector_into(
        field,
        Reduction::Sum,
        VectorMode::PerComponent,
        &out,
        1,
        &mut timeline,
    )
    .unwrap();
    g.reduce_vector_into(
        field,
        Reduction::Max,
        VectorMode::Norm,
        &out,
        5,
        &mut timeline,
    )
    .unwrap();
    g.reduce_into(ints, Reduction::L0, &out, 6, &mut timeline)
        .unwrap();
    let got = out.read().unwrap();
    let sums = columns(&flat, 4, VectorMode::PerComponent);
    assert_eq!(got[0], 0.0);
    for c in 0..4 {
        let want = reduce_cpu(&sums[c], Reduction::Sum) as f32;
        assert_eq!(got[1 + c], want, "component {c}");
    }
    let max_norm = reduce_cpu(&columns(&flat, 4, VectorMode::Norm)[0], Reduction::Max);
    assert!((f64::from(got[5]) - max_norm).abs() <= 1e-6 * max_norm);
    assert_eq!(got[6], (n - 1) as f32, "one zero among the ints");
    assert_eq!(got[7], 0.0);
    // Four results do not fit from index 5 of 8.
    let err = g
        .reduce_vector_into(
            field,
            Reduction::Sum,
            VectorMode::PerComponent,
            &out,
            5,
            &mut timeline,
        )
        .unwrap_err();
    assert!(matches!(err, GmlError::LineOutOfRange { .. }), "{err}");

    // Per component and over norms into a parameter struct of floats; four results do not
    // fit from byte 20 of 32.
    let floats: Parameters<[f32; 8]> = g
        .new_parameters("typedef struct { float sums[4]; float norm; float pad[3]; } GmlParSct;")
        .unwrap();
    g.upload_parameters(&floats, &[0.0; 8]).unwrap();
    let per = VectorMode::PerComponent;
    g.reduce_vector_into_parameters(field, Reduction::Sum, per, &floats, 0, &mut timeline)
        .unwrap();
    g.reduce_vector_into_parameters(
        field,
        Reduction::Max,
        VectorMode::Norm,
        &floats,
        16,
        &mut timeline,
    )
    .unwrap();
    let got = g.download_parameters(&floats).unwrap();
    for c in 0..4 {
        assert_eq!(
            got[c],
            reduce_cpu(&sums[c], Reduction::Sum) as f32,
            "component {c}"
        );
    }
    assert!((f64::from(got[4]) - max_norm).abs() <= 1e-6 * max_norm);
    assert_eq!(got[5..], [0.0; 3], "nothing written past the results");
    let err = g
        .reduce_vector_into_parameters(field, Reduction::Sum, per, &floats, 20, &mut timeline)
        .unwrap_err();
    assert!(matches!(err, GmlError::ReductionOffset { .. }), "{err}");

    if g.has_fp64() {
        // Doubles: into a double buffer, and a f64 field into the parameter struct.
        let doubles = cl::DeviceBuffer::<f64>::zeroed(g.context(), 2).unwrap();
        g.reduce_into(ints, Reduction::Sum, &doubles, 1, &mut timeline)
            .unwrap();
        let want: i64 = int_values.iter().map(|&x| i64::from(x)).sum();
        assert_eq!(doubles.read().unwrap(), [0.0, want as f64]);

        let f64s = g.new_solution::<f64>(kind, 1, "F64").unwrap();
        let f64_values: Vec<f64> = (0..n).map(|i| 1.0 + 1e-9 * i as f64).collect();
        g.set_block(f64s, 0, &f64_values).unwrap();
        let params: Parameters<Scalars> = g
            .new_parameters(
                "typedef struct { double norm; double sum; float count; float pad; } GmlParSct;",
            )
            .unwrap();
        g.upload_parameters(&params, &Scalars::default()).unwrap();
        g.reduce_into_parameters(f64s, Reduction::L2, &params, 0, &mut timeline)
            .unwrap();
        g.reduce_into_parameters(f64s, Reduction::Sum, &params, 8, &mut timeline)
            .unwrap();
        g.reduce_into_parameters(ints, Reduction::L0, &params, 16, &mut timeline)
            .unwrap();
        // The largest norm of the f32 vectors, as a float, into the struct's last slot.
        g.reduce_vector_into_parameters(
            field,
            Reduction::Max,
            VectorMode::Norm,
            &params,
            20,
            &mut timeline,
        )
        .unwrap();
        let scalars = g.download_parameters(&params).unwrap();
        assert!(
            (f64::from(scalars.pad) - max_norm).abs() <= 1e-6 * max_norm,
            "{scalars:?} vs {max_norm}"
        );
        let norm = reduce_cpu(&f64_values, Reduction::L2);
        let sum = reduce_cpu(&f64_values, Reduction::Sum);
        assert!((scalars.norm - norm).abs() <= 1e-13 * norm, "{scalars:?}");
        assert!((scalars.sum - sum).abs() <= 1e-13 * sum, "{scalars:?}");
        assert_eq!(scalars.count, (n - 1) as f32);
        // A double must sit at a multiple of 8 inside the struct.
        for offset in [4, 24] {
            let err = g
                .reduce_into_parameters(f64s, Reduction::Sum, &params, offset, &mut timeline)
                .unwrap_err();
            assert!(matches!(err, GmlError::ReductionOffset { .. }), "{err}");
        }
    }
    // Two passes per reduction.
    timeline.wait().unwrap();
    assert!(timeline.len() >= 6);
}

#[test]
fn counters_name_each_operator_and_empty_fields_are_refused() {
    let mut g = gml();
    g.new_mesh(MeshKind::Vertices, 5).unwrap();
    let f = g.new_solution::<f32>(MeshKind::Vertices, 1, "F").unwrap();
    g.set_block(f, 0, &[0.0, 1.0, 0.0, -2.0, 0.5]).unwrap();
    assert_eq!(g.reduce(f, Reduction::L0).unwrap(), 3.0);
    assert_eq!(
        g.reduce_vector(f, Reduction::Max, VectorMode::Norm)
            .unwrap(),
        [2.0]
    );
    if g.context().profiling() {
        for stage in ["reduce.l0", "reduce.max"] {
            assert!(g.counters().get(stage).is_some(), "{stage}");
        }
    }
    g.new_mesh(MeshKind::Edges, 0).unwrap();
    let empty = g.new_solution::<f32>(MeshKind::Edges, 1, "E").unwrap();
    assert!(matches!(
        g.reduce(empty, Reduction::Sum),
        Err(GmlError::EmptyReduction(_))
    ));
    let pairs = g.new_solution::<i32>(MeshKind::Vertices, 2, "P").unwrap();
    assert!(matches!(
        g.reduce(pairs, Reduction::Sum),
        Err(GmlError::NotReducible(_))
    ));
}

/// Float values whose sums or squares overflow `float` but not `double`: where the device has
/// FP64 the results are the double ones (the GPU layout sums in float first, and must carry a
/// partial that would overflow into the double accumulator).
#[test]
fn float_sums_and_squares_beyond_float_range_stay_exact_in_double() {
    let mut g = gml();
    if !g.has_fp64() {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", g.device().label()),
        );
        return;
    }
    let n = 4099;
    g.new_mesh(MeshKind::Vertices, n).unwrap();
    let big = g.new_solution::<f32>(MeshKind::Vertices, 1, "Big").unwrap();
    g.set_block(big, 0, &vec![3.0e38f32; n]).unwrap();
    let wide = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Wide")
        .unwrap();
    g.set_block(wide, 0, &vec![-1.0e20f32; n]).unwrap();
    let tiny = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Tiny")
        .unwrap();
    let tiny_values: Vec<f32> = (0..n).map(|i| 1.0e-25 * (1.0 + i as f32)).collect();
    g.set_block(tiny, 0, &tiny_values).unwrap();
    for form in FORMS {
        g.set_reduce_options(options(form, false));
        let sum = g.reduce(big, Reduction::Sum).unwrap();
        let want = n as f64 * f64::from(3.0e38f32);
        assert!(
            (sum - want).abs() <= 1e-12 * want,
            "{form:?}: sum {sum:e} vs {want:e}"
        );
        let l1 = g.reduce(wide, Reduction::L1).unwrap();
        assert!(
            (l1 - n as f64 * 1e20).abs() <= 1e-6 * n as f64 * 1e20,
            "{form:?}: L1 {l1:e}"
        );
        let l2 = g.reduce(wide, Reduction::L2).unwrap();
        let want = (n as f64).sqrt() * f64::from(1.0e20f32);
        assert!(
            (l2 - want).abs() <= 1e-12 * want,
            "{form:?}: L2 {l2:e} vs {want:e}"
        );
        // Squares below float's range (1e-50), which the float runs must not lose.
        let l2 = g.reduce(tiny, Reduction::L2).unwrap();
        let want = accurate_sum(tiny_values.iter().map(|&x| f64::from(x).powi(2))).sqrt();
        assert!(
            (l2 - want).abs() <= 1e-12 * want,
            "{form:?}: L2 of tiny values {l2:e} vs {want:e}"
        );
    }
}
