//! Misuse through the safe crate gives `Err` with the status and a message naming the problem, leaves
//! outputs alone, and never reaches C with a slice too short for what it is said to hold.

use gpk::*;

fn invalid<T: std::fmt::Debug>(result: Result<T>, word: &str) {
    match result {
        Ok(v) => panic!("expected an invalid-argument error naming {word:?}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.status(), Status::InvalidArgument, "{e}");
            assert!(e.message().contains(word), "message {:?} does not name {word:?}", e.message());
            assert!(e.to_string().starts_with("invalid argument: "), "{e}");
        }
    }
}

#[test]
fn images_must_fit_their_slices() {
    let data = [0u8; 12];
    invalid(ImageRef::new(&data, 4, 4, 1), "needs 16");
    invalid(ImageRef::new(&data, 2, 2, 4), "needs 16");
    invalid(ImageRef::with_stride(&data, 4, 3, 1, 3), "stride");
    invalid(ImageRef::with_stride(&data, 2, 3, 1, 6), "needs 14");
    invalid(ImageRef::new(&data, 0, 1, 1), "0x1");
    invalid(ImageRef::new(&data, 3, 0, 1), "3x0");
    invalid(ImageRef::new(&data, 1, 1, 0), "channels");
    invalid(ImageRef::new(&data, 1, 1, 5), "channels");
    invalid(ImageRef::new(&data, usize::MAX, 2, 4), "overflow");
    let mut out = [0f32; 5];
    invalid(ImageMut::new(&mut out, 3, 2, 1), "needs 6");
    assert!(ImageRef::with_stride(&data, 2, 3, 1, 5).is_ok(), "the last row needs no padding");
}

#[test]
fn heat_misuse() {
    let mut ctx = Context::new().unwrap();
    let tinit = vec![20.0; 12];
    let cond = vec![0.5; 12];
    let mut tfinal = vec![-7.0; 12];
    let params = HeatParams::new(3, 4).maxiter(10);
    invalid(ctx.heat_into(&HeatParams::new(4, 4), &tinit, &cond, &mut tfinal), "tinit");
    invalid(ctx.heat_into(&params, &tinit, &cond[..11], &mut tfinal), "conductivity");
    invalid(ctx.heat_into(&params, &tinit, &cond, &mut tfinal[..3]), "tfinal");
    invalid(ctx.heat(&HeatParams::new(usize::MAX, 3), &tinit, &cond), "overflows");
    invalid(ctx.heat_into(&params.maxiter(0), &tinit, &cond, &mut tfinal), "maxiter");
    invalid(ctx.heat_into(&params.threshold(f64::NAN), &tinit, &cond, &mut tfinal), "threshold");
    invalid(ctx.heat_into(&params.threshold(-1.0), &tinit, &cond, &mut tfinal), "threshold");
    let mut hot = cond.clone();
    hot[5] = 1.5;
    invalid(ctx.heat_into(&params, &tinit, &hot, &mut tfinal), "conductivity");
    let mut infinite = tinit.clone();
    infinite[0] = f64::INFINITY;
    invalid(ctx.heat_into(&params, &infinite, &cond, &mut tfinal), "tinit");
    invalid(ctx.heat(&HeatParams::new(0, 4), &[], &[]), "rows");
    assert!(tfinal.iter().all(|&v| v == -7.0), "tfinal untouched by rejected runs");
}

#[test]
fn histogram_misuse() {
    let mut ctx = Context::new().unwrap();
    let data = [1u16; 40];
    invalid(ctx.histogram(&HistogramParams::new(0), &data), "bins");
    invalid(ctx.histogram(&HistogramParams::new(8).range(4.0, 4.0), &data), "upper");
    invalid(ctx.histogram(&HistogramParams::new(8).range(f64::NAN, 4.0), &data), "lower");
    invalid(ctx.histogram(&HistogramParams::new(8).range(0.0, f64::INFINITY), &data), "upper");
    invalid(ctx.histogram::<u16>(&HistogramParams::new(8), &[]), "0x1");
    let err = ctx.histogram(&HistogramParams::new(1 << 41), &data).unwrap_err();
    assert!(matches!(err.status(), Status::InvalidArgument | Status::OutOfMemory), "{err}");
}

#[test]
fn convolve_misuse() {
    let mut ctx = Context::new().unwrap();
    let lp3 = Filter::named("lp3").unwrap();
    let input = [9u8; 24];
    let mut out = [0u8; 24];
    let image = ImageRef::new(&input, 6, 4, 1).unwrap();
    let params = ConvolveParams::new(&lp3);
    invalid(ctx.convolve(&params, &image, &mut ImageMut::new(&mut out, 4, 6, 1).unwrap()), "same width");
    invalid(ctx.convolve(&params, &image, &mut ImageMut::new(&mut out, 3, 4, 2).unwrap()), "same width");
    invalid(
        ctx.convolve(
            &params.normalize(Normalize::Sum),
            &image,
            &mut ImageMut::new(&mut out, 6, 4, 1).unwrap(),
        ),
        "sum",
    );
    assert!(out.iter().all(|&v| v == 0), "out untouched by rejected calls");
}

#[test]
fn filter_misuse() {
    invalid(Filter::named("nope"), "nope");
    invalid(Filter::named("box:4"), "box:4");
    invalid(Filter::named("gauss:-1"), "SIGMA");
    invalid(Filter::named("lp3\0x"), "NUL");
    invalid(Filter::new_2d(3, 3, &[1.0; 8]), "kh * kw");
    invalid(Filter::new_2d(2, 2, &[1.0; 4]), "kh");
    invalid(Filter::new_2d(65, 1, &[1.0; 65]), "kh");
    invalid(Filter::new_2d(1, 1, &[f64::NAN]), "finite");
    invalid(Filter::separable(&[], &[1.0]), "row_len");
    invalid(Filter::separable(&[1.0; 3], &[1.0; 131]), "col_len");
}

#[test]
fn backends_and_errors() {
    let ctx = Context::builder().backend(Backend::Cpu).build().unwrap();
    assert_eq!(ctx.backend(), Backend::Cpu);
    invalid(Context::builder().device(u32::MAX).build(), "device");
    let mut count = 0;
    if unsafe { gpk_sys::gpk_device_count(&mut count) } != gpk_sys::GPK_OK {
        let err = Context::builder().backend(Backend::Cuda).build().unwrap_err();
        assert_eq!(err.status(), Status::NoDevice, "{err}");
        assert!(!err.message().is_empty());
    }
    assert_eq!(Status::from_raw(gpk_sys::GPK_ERR_CANCELLED), Some(Status::Cancelled));
    assert_eq!(Status::from_raw(99), Some(Status::Unknown(99)));
    assert_eq!(Status::from_raw(gpk_sys::GPK_OK), None);
    assert_eq!(Status::Unknown(99).to_string(), "unknown status");
    assert_eq!(version().split('.').count(), 3);
}

#[test]
fn a_context_moves_to_another_thread() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<Context>();
    assert_send_sync::<Filter>();

    let mut ctx = Context::new().unwrap();
    let filter = std::sync::Arc::new(Filter::named("box:3").unwrap());
    let shared = filter.clone();
    let worker = std::thread::spawn(move || {
        let data = [3u8; 16];
        let mut out = [0u8; 16];
        let params = ConvolveParams::new(&shared).normalize(Normalize::Sum);
        ctx.convolve(
            &params,
            &ImageRef::new(&data, 4, 4, 1).unwrap(),
            &mut ImageMut::new(&mut out, 4, 4, 1).unwrap(),
        )
        .map(|_| out)
    });
    let out = worker.join().unwrap().unwrap();
    assert!(out.iter().all(|&v| v == 3), "{out:?}");
    assert_eq!(filter.info().kw, 3);
}
