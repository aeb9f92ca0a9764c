//! Films of a run (issue 27, item 5): `--record X.gif` writes an animated GIF of the frames at
//! the scene's frame rate, and `--video X.mp4` needs ffmpeg, which is looked for before the run
//! starts.

use image::AnimationDecoder;

use super::{FLAT, snowsim, temp_dir, text};

#[test]
fn record_to_a_gif_writes_every_frame_at_the_scenes_frame_rate() {
    let dir = temp_dir("gif");
    let gif = dir.join("clip.gif");
    let out = snowsim()
        .args([
            "run",
            "--scene",
            FLAT,
            "--headless",
            "--frames",
            "5",
            "--size",
            "96x54",
        ])
        .arg("--record")
        .arg(&gif)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let file = std::io::BufReader::new(std::fs::File::open(&gif).unwrap());
    let frames = image::codecs::gif::GifDecoder::new(file)
        .unwrap()
        .into_frames()
        .collect_frames()
        .unwrap();
    assert_eq!(frames.len(), 5, "{}", text(&out));
    for frame in &frames {
        assert_eq!(frame.buffer().dimensions(), (96, 54));
        // The flat scene's time.step is 0.02 s: 50 frames a second, 20 ms each.
        let (num, den) = frame.delay().numer_denom_ms();
        assert!(
            (f64::from(num) / f64::from(den) - 20.0).abs() < 1.0,
            "{num}/{den} ms"
        );
    }
    // The frames it was made of are gone: only the GIF is left.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("clip.gif")]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn video_without_ffmpeg_fails_before_the_run_naming_ffmpeg() {
    let dir = temp_dir("video");
    let video = dir.join("clip.mp4");
    let empty = dir.join("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = snowsim()
        .env("PATH", &empty)
        .args(["run", "--scene", FLAT, "--headless", "--frames", "5"])
        .arg("--video")
        .arg(&video)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ffmpeg is not on PATH"), "{}", text(&out));
    assert!(
        !stderr.contains("device:"),
        "it failed before the run: {}",
        text(&out)
    );
    assert!(!video.exists());
    std::fs::remove_dir_all(&dir).ok();
}
