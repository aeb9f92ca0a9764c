//! The terrain mesher: heightmaps read from real PNG files, conforming positive tetrahedra,
//! every boundary face referenced and facing out, the volume between the ground and the top,
//! graded layers, the ground surface, and `snowsim mesh terrain`.

use std::collections::HashMap;
use std::path::Path;

use glam::DVec3;
use image::{GrayImage, ImageBuffer, Luma, RgbImage};
use snowsim::inspect::check;
use snowsim::meshio::{self, ElementKind, Mesh};
use snowsim::terrain::{Heightmap, Side, Terrain, TerrainError, TerrainSpec, extract_surface};

use crate::common::{snowsim, temp_dir};

fn tet_volume(m: &Mesh, t: &[u32]) -> f64 {
    let p = |i: usize| DVec3::from(m.vertices[t[i] as usize]);
    (p(1) - p(0)).cross(p(2) - p(0)).dot(p(3) - p(0)) / 6.0
}

/// Twice the area of triangle `p`, as a vector along its normal (right-hand rule).
fn twice_area(p: [[f64; 3]; 3]) -> DVec3 {
    let [a, b, c] = p.map(DVec3::from);
    (b - a).cross(c - a)
}

/// A 16-bit PNG of `w × h` pixels whose value at (col, row) is `f(col, row)`.
fn png16(path: &Path, w: u32, h: u32, f: impl Fn(u32, u32) -> u16) {
    let img: ImageBuffer<Luma<u16>, Vec<u16>> = ImageBuffer::from_fn(w, h, |c, r| Luma([f(c, r)]));
    img.save(path).unwrap();
}

/// A bumpy 16-bit heightmap: hills and a diagonal valley.
fn bumpy(path: &Path) {
    png16(path, 40, 30, |c, r| {
        let (u, v) = (c as f64 / 39.0, r as f64 / 29.0);
        let h =
            0.5 + 0.3 * (7.0 * u).sin() * (5.0 * v).cos() - 0.2 * (-(u - v).powi(2) * 30.0).exp();
        (h.clamp(0.0, 1.0) * 65535.0).round() as u16
    });
}

fn spec(cells: [usize; 2], layers: usize) -> TerrainSpec {
    TerrainSpec {
        size: [900.0, 600.0, 500.0],
        relief: 300.0,
        cells,
        layers,
        grading: 1.25,
    }
}

#[test]
fn heightmaps_of_8_and_16_bits_are_read_exactly() {
    let dir = temp_dir("terrain", "read");
    let eight = dir.join("eight.png");
    GrayImage::from_fn(4, 3, |c, r| Luma([(c * 60 + r * 10) as u8]))
        .save(&eight)
        .unwrap();
    let map = Heightmap::read(&eight).unwrap();
    assert_eq!((map.width(), map.height(), map.bits()), (4, 3, 8));
    assert_eq!(map.pixel(3, 2), (3.0 * 60.0 + 20.0) / 255.0);
    // Row 0 is north: v = 1; column 3 is east: u = 1.
    assert_eq!(map.sample(1.0, 1.0), map.pixel(3, 0));
    assert_eq!(map.sample(0.0, 0.0), map.pixel(0, 2));

    let sixteen = dir.join("sixteen.png");
    png16(&sixteen, 3, 5, |c, r| (c * 20000 + r * 1000 + 7) as u16);
    let map = Heightmap::read(&sixteen).unwrap();
    assert_eq!((map.width(), map.height(), map.bits()), (3, 5, 16));
    assert_eq!(map.pixel(2, 4), 44007.0 / 65535.0);
    assert_eq!(map.range(), (7.0 / 65535.0, 44007.0 / 65535.0));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_heightmaps_are_clear_errors() {
    let dir = temp_dir("terrain", "bad");
    let message = |path: &Path| Heightmap::read(path).unwrap_err().to_string();

    let rgb = dir.join("rgb.png");
    RgbImage::from_pixel(4, 4, image::Rgb([10, 20, 30]))
        .save(&rgb)
        .unwrap();
    let m = message(&rgb);
    assert!(
        m.contains("rgb.png") && m.contains("RGB, 8 bits") && m.contains("grayscale"),
        "{m}"
    );

    let alpha = dir.join("alpha.png");
    ImageBuffer::<image::LumaA<u8>, Vec<u8>>::from_pixel(4, 4, image::LumaA([1, 2]))
        .save(&alpha)
        .unwrap();
    assert!(message(&alpha).contains("grayscale with alpha"));

    let thin = dir.join("thin.png");
    GrayImage::new(1, 9).save(&thin).unwrap();
    assert!(matches!(
        Heightmap::read(&thin),
        Err(TerrainError::TooSmall {
            width: 1,
            height: 9,
            ..
        })
    ));

    let text = dir.join("notes.png");
    std::fs::write(&text, "not an image").unwrap();
    assert!(message(&text).contains("is not a PNG file"));

    let truncated = dir.join("truncated.png");
    let good = dir.join("good.png");
    bumpy(&good);
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let m = message(&truncated);
    assert!(
        m.contains("truncated.png") && m.contains("cannot decode"),
        "{m}"
    );

    // A header claiming a huge image is refused before anything is allocated.
    let mut huge = bytes.clone();
    huge[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    assert!(matches!(
        Heightmap::decode(&huge, Path::new("huge.png")),
        Err(TerrainError::TooLarge { width: 100_000, .. })
    ));

    let missing = dir.join("missing.png");
    let m = message(&missing);
    assert!(
        m.contains("missing.png") && m.contains("cannot read"),
        "{m}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn sorted(t: [u32; 3]) -> [u32; 3] {
    let mut k = t;
    k.sort_unstable();
    k
}

#[test]
fn the_mesh_is_conforming_positive_and_its_boundary_fully_referenced() {
    let dir = temp_dir("terrain", "conform");
    let path = dir.join("bumpy.png");
    bumpy(&path);
    let map = Heightmap::read(&path).unwrap();
    let s = spec([7, 5], 4);
    let mesh = Terrain::new(s, Some(&map)).unwrap().volume_mesh();
    assert_eq!(mesh.count(ElementKind::Tetrahedra), 6 * 7 * 5 * 4);

    for (t, r) in mesh.elements(ElementKind::Tetrahedra).iter() {
        assert!(tet_volume(&mesh, t) > 0.0, "tetrahedron {t:?}");
        assert_eq!(r, 1);
    }
    let report = check(&mesh);
    assert!(report.passed(), "{report:?}");

    // Every face of every tetrahedron, with the outward orientation it has in its tetrahedron.
    let mut faces: HashMap<[u32; 3], Vec<[u32; 3]>> = HashMap::new();
    for (t, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for f in ElementKind::Tetrahedra.faces() {
            let face = [t[f[0]], t[f[1]], t[f[2]]];
            faces.entry(sorted(face)).or_default().push(face);
        }
    }
    let triangles: HashMap<[u32; 3], ([u32; 3], i32)> = mesh
        .elements(ElementKind::Triangles)
        .iter()
        .map(|(t, r)| (sorted([t[0], t[1], t[2]]), ([t[0], t[1], t[2]], r)))
        .collect();
    assert_eq!(
        triangles.len(),
        mesh.count(ElementKind::Triangles),
        "duplicated triangles"
    );
    let same_turn =
        |a: [u32; 3], b: [u32; 3]| (0..3).any(|k| [a[k], a[(k + 1) % 3], a[(k + 2) % 3]] == b);
    let mut boundary = 0;
    for (key, owners) in &faces {
        match owners.len() {
            2 => assert!(
                !triangles.contains_key(key),
                "interior face {key:?} has a triangle"
            ),
            1 => {
                boundary += 1;
                let (tri, r) = triangles
                    .get(key)
                    .unwrap_or_else(|| panic!("boundary face {key:?} has no triangle"));
                assert!((1..=6).contains(r));
                assert!(same_turn(owners[0], *tri), "triangle {tri:?} faces inwards");
            }
            n => panic!("face {key:?} shared by {n} tetrahedra"),
        }
    }
    assert_eq!(boundary, mesh.count(ElementKind::Triangles));

    // Each side's triangles lie on it and face away from the domain.
    let [x, y, z] = s.size;
    for (t, r) in mesh.elements(ElementKind::Triangles).iter() {
        let p = [0, 1, 2].map(|i| mesh.vertices[t[i] as usize]);
        let n = twice_area(p);
        let all = |d: usize, v: f64| p.iter().all(|q| q[d] == v);
        match Side::from_reference(r).unwrap() {
            Side::XMin => assert!(all(0, 0.0) && n[0] < 0.0),
            Side::XMax => assert!(all(0, x) && n[0] > 0.0),
            Side::YMin => assert!(all(1, 0.0) && n[1] < 0.0),
            Side::YMax => assert!(all(1, y) && n[1] > 0.0),
            Side::Top => assert!(all(2, z) && n[2] > 0.0),
            Side::Ground => assert!(n[2] < 0.0),
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Bilinear interpolation of raw 16-bit pixels, written here independently of the library.
fn bilinear(pixels: &[Vec<u16>], u: f64, v: f64) -> f64 {
    let (h, w) = (pixels.len(), pixels[0].len());
    let fx = u * (w - 1) as f64;
    let fy = (1.0 - v) * (h - 1) as f64;
    let (c, r) = ((fx as usize).min(w - 2), (fy as usize).min(h - 2));
    let (a, b) = (fx - c as f64, fy - r as f64);
    let p = |c: usize, r: usize| f64::from(pixels[r][c]) / 65535.0;
    (p(c, r) * (1.0 - a) + p(c + 1, r) * a) * (1.0 - b)
        + (p(c, r + 1) * (1.0 - a) + p(c + 1, r + 1) * a) * b
}

#[test]
fn the_tetrahedra_fill_exactly_the_air_between_ground_and_top() {
    let dir = temp_dir("terrain", "volume");
    // An inclined plane: bilinear interpolation and any triangulation of it are exact, so the
    // volume is X·Y·Z minus the volume under the plane.
    let plane = dir.join("plane.png");
    png16(&plane, 17, 9, |c, r| {
        (2000 * c + 900 * (8 - r) + 3000) as u16
    });
    let map = Heightmap::read(&plane).unwrap();
    let s = spec([9, 7], 5);
    let [x, y, z] = s.size;
    let height =
        |u: f64, v: f64| s.relief * (2000.0 * 16.0 * u + 900.0 * 8.0 * v + 3000.0) / 65535.0;
    let under = x * y * height(0.5, 0.5); // the mean of a plane over the rectangle
    let mesh = Terrain::new(s, Some(&map)).unwrap().volume_mesh();
    let volume: f64 = mesh
        .elements(ElementKind::Tetrahedra)
        .iter()
        .map(|(t, _)| tet_volume(&mesh, t))
        .sum();
    let expected = x * y * z - under;
    // Rounding only: one missing tetrahedron would be 1/1890 of it.
    assert!(
        ((volume - expected) / expected).abs() < 1e-12,
        "{volume} vs {expected}"
    );

    // A bumpy ground: the ground triangles interpolate the heightmap at the grid points (checked
    // against raw pixels), cover the rectangle once, and the tetrahedra fill the prisms above
    // them up to the top.
    let path = dir.join("bumpy.png");
    bumpy(&path);
    let img = image::open(&path).unwrap().into_luma16();
    let pixels: Vec<Vec<u16>> = (0..img.height())
        .map(|r| (0..img.width()).map(|c| img.get_pixel(c, r)[0]).collect())
        .collect();
    let map = Heightmap::read(&path).unwrap();
    let s = spec([13, 11], 6);
    let mesh = Terrain::new(s, Some(&map)).unwrap().volume_mesh();
    let mut area = 0.0;
    let mut expected = 0.0;
    let mut bilinear_under = 0.0;
    for (t, r) in mesh.elements(ElementKind::Triangles).iter() {
        if r != Side::Ground.reference() {
            continue;
        }
        let p = [0, 1, 2].map(|i| mesh.vertices[t[i] as usize]);
        for q in p {
            let g = s.relief * bilinear(&pixels, q[0] / x, q[1] / y);
            assert!(
                (q[2] - g).abs() < 1e-9,
                "ground vertex {q:?}, heightmap {g}"
            );
        }
        let a = 0.5 * twice_area(p).z.abs();
        area += a;
        expected += a * (z - (p[0][2] + p[1][2] + p[2][2]) / 3.0);
        let c = [0, 1].map(|d| (p[0][d] + p[1][d] + p[2][d]) / 3.0);
        bilinear_under += a * s.relief * bilinear(&pixels, c[0] / x, c[1] / y);
    }
    assert!((area - x * y).abs() < 1e-6 * x * y, "ground area {area}");
    let volume: f64 = mesh
        .elements(ElementKind::Tetrahedra)
        .iter()
        .map(|(t, _)| tet_volume(&mesh, t))
        .sum();
    assert!(
        ((volume - expected) / expected).abs() < 1e-12,
        "{volume} vs {expected}"
    );
    // And close to the air above the heightmap's own bilinear surface (midpoint rule).
    let air = x * y * z - bilinear_under;
    assert!(((volume - air) / air).abs() < 0.01, "{volume} vs {air}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn layers_are_graded_finest_at_the_ground_in_every_column() {
    let s = TerrainSpec {
        grading: 1.3,
        ..spec([3, 2], 5)
    };
    let terrain = Terrain::from_fn(s, |x, y| 50.0 + 0.1 * x + 0.05 * y).unwrap();
    let mesh = terrain.volume_mesh();
    let columns = 4 * 3;
    for c in 0..columns {
        let z: Vec<f64> = (0..=5).map(|k| mesh.vertices[c + columns * k][2]).collect();
        let dz: Vec<f64> = z.windows(2).map(|w| w[1] - w[0]).collect();
        for w in dz.windows(2) {
            assert!((w[1] / w[0] - 1.3).abs() < 1e-9, "column {c}: {dz:?}");
        }
        assert_eq!(z[5], s.size[2]);
        let (i, j) = (c % 4, c / 4);
        assert!((z[0] - terrain.height(i, j)).abs() < 1e-12);
    }
}

#[test]
fn the_ground_surface_stands_alone_and_matches_the_volume_mesh() {
    let dir = temp_dir("terrain", "surface");
    let path = dir.join("bumpy.png");
    bumpy(&path);
    let map = Heightmap::read(&path).unwrap();
    let s = spec([6, 4], 3);
    let terrain = Terrain::new(s, Some(&map)).unwrap();
    let volume = terrain.volume_mesh();
    let ground = terrain.ground_surface();
    assert_eq!(ground.mesh.count(ElementKind::Triangles), 2 * 6 * 4);
    assert_eq!(ground.mesh.vertices.len(), 7 * 5);
    for (i, &v) in ground.volume_vertices.iter().enumerate() {
        assert_eq!(ground.mesh.vertices[i], volume.vertices[v as usize]);
    }
    let up = |m: &Mesh| {
        m.elements(ElementKind::Triangles).iter().all(|(t, _)| {
            let p = [0, 1, 2].map(|i| m.vertices[t[i] as usize]);
            twice_area(p).z > 0.0
        })
    };
    assert!(up(&ground.mesh), "ground normals point up");
    // Extracted from the volume mesh by reference, the same surface comes out.
    let extracted = extract_surface(&volume, Side::Ground.reference()).unwrap();
    assert!(up(&extracted.mesh));
    let key = |g: &snowsim::terrain::GroundSurface| {
        let mut tris: Vec<Vec<u32>> = g
            .mesh
            .elements(ElementKind::Triangles)
            .iter()
            .map(|(t, _)| {
                let mut v: Vec<u32> = t.iter().map(|&n| g.volume_vertices[n as usize]).collect();
                v.sort_unstable();
                v
            })
            .collect();
        tris.sort();
        tris
    };
    assert_eq!(key(&extracted), key(&ground));
    assert!(extract_surface(&volume, 42).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cli_terrain_writes_a_valid_mesh_and_its_surface() {
    let dir = temp_dir("terrain", "cli");
    let heightmap = dir.join("bumpy.png");
    bumpy(&heightmap);
    let (out, surface) = (dir.join("air.meshb"), dir.join("ground.meshb"));
    let o = snowsim(&[
        "mesh",
        "terrain",
        "--heightmap",
        heightmap.to_str().unwrap(),
        "--size",
        "900,600,500",
        "--relief",
        "300",
        "--cells",
        "10,8",
        "--layers",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--surface",
        surface.to_str().unwrap(),
        "--renumber",
        "--check",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}{}",
        text,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("5 ground (160)") && text.contains("no problem found"),
        "{text}"
    );
    let air = meshio::read(&out).unwrap().mesh;
    assert_eq!(air.count(ElementKind::Tetrahedra), 6 * 10 * 8 * 5);
    assert!(check(&air).passed());
    let ground = meshio::read(&surface).unwrap().mesh;
    assert_eq!(ground.count(ElementKind::Triangles), 160);

    let flat_relief = snowsim(&[
        "mesh",
        "terrain",
        "--size",
        "1,1,1",
        "--relief",
        "0.5",
        "--cells",
        "2,2",
        "--layers",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(flat_relief.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&flat_relief.stderr).contains("--relief needs --heightmap"));

    let too_high = snowsim(&[
        "mesh",
        "terrain",
        "--heightmap",
        heightmap.to_str().unwrap(),
        "--size",
        "900,600,500",
        "--relief",
        "500",
        "--cells",
        "2,2",
        "--layers",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&too_high.stderr);
    assert!(
        !too_high.status.success() && err.contains("relief") && err.contains("below the top"),
        "{err}"
    );

    let bad_size = snowsim(&[
        "mesh",
        "terrain",
        "--size",
        "1,1",
        "--cells",
        "2,2",
        "--layers",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(bad_size.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad_size.stderr).contains("expected 3 comma-separated values")
    );
    std::fs::remove_dir_all(&dir).ok();
}
