use snowsim::cl::{Context, DeviceSelector, list_devices};
fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).unwrap();
    let scene = snowsim::scene::Scene::load(std::path::Path::new(&path))?;
    let devices = list_devices()?;
    let entry = DeviceSelector::Default.select(&devices)?;
    let mut s = snowsim::wind::setup::from_scene(Context::new(entry)?, &scene, snowsim::wind::setup::settings(&scene, false))?;
    let st = s.startup()?;
    println!("{} it {:e}", st.iterations, st.divergence_after);
    let div = s.divergence()?;
    let flags = s.boundary().flags.clone();
    let proj = s.boundary().projector.clone();
    let v = s.vertices().to_vec();
    let mut idx: Vec<usize> = (0..div.len()).collect();
    idx.sort_by(|a, b| div[*b].abs().total_cmp(&div[*a].abs()));
    for &i in idx.iter().take(15) {
        println!("{i} div {:e} flags {} P {:?} at {:?}", div[i], flags[i], proj[i], v[i]);
    }
    Ok(())
}
