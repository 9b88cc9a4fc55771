//! The safe crate gives the C API's results on the same inputs.

mod common;

use common::*;
use gpk::*;
use gpk_sys as sys;

fn same_report(a: &HeatReport, b: &HeatReport) -> bool {
    // Everything but the time.
    a.niter == b.niter && a.tmin == b.tmin && a.tmax == b.tmax && a.maxdiff == b.maxdiff && a.tavg == b.tavg
}

fn heat_inputs(rows: usize, cols: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Lcg(seed);
    let tinit = rng.vec(rows * cols, |v| v as f64 / 10.0 - 20.0, 600);
    let conductivity = rng.vec(rows * cols, |v| v as f64 / 100.0, 101);
    (tinit, conductivity)
}

#[test]
fn heat_with_periodic_reports_equals_c() {
    let (rows, cols) = (7, 5);
    let (tinit, conductivity) = heat_inputs(rows, cols, 1);
    let mut ctx = Context::new().unwrap();
    let params = HeatParams::new(rows, cols).maxiter(60).period(10);
    let (grid, run) = ctx.heat(&params, &tinit, &conductivity).unwrap();
    let (status, c_grid, c_report, c_periodic) = c_heat(rows, cols, 60, 0.0, 10, &tinit, &conductivity);
    assert_eq!(status, sys::GPK_OK);
    assert_eq!(grid, c_grid);
    assert!(same_report(&run.report, &c_report), "{:?} vs {:?}", run.report, c_report);
    assert_eq!(run.report.niter, 60);
    assert_eq!(run.periodic.len(), 6);
    assert_eq!(run.periodic.len(), c_periodic.len());
    for (a, b) in run.periodic.iter().zip(&c_periodic) {
        assert!(same_report(a, b), "{a:?} vs {b:?}");
    }
}

#[test]
fn heat_to_convergence_equals_c() {
    let (rows, cols) = (12, 9);
    let (tinit, conductivity) = heat_inputs(rows, cols, 2);
    let mut ctx = Context::builder().threads(2).build().unwrap();
    let params = HeatParams::new(rows, cols).maxiter(100_000).threshold(1e-3);
    let mut grid = vec![0.0; rows * cols];
    let run = ctx.heat_into(&params, &tinit, &conductivity, &mut grid).unwrap();
    let (status, c_grid, c_report, _) = c_heat(rows, cols, 100_000, 1e-3, 0, &tinit, &conductivity);
    assert_eq!(status, sys::GPK_OK);
    assert!(run.report.niter < 100_000 && run.report.maxdiff < 1e-3);
    assert!(run.periodic.is_empty());
    assert!(same_report(&run.report, &c_report));
    assert_eq!(grid, c_grid);
}

#[test]
fn u8_rgb_histogram_of_a_padded_image_equals_c() {
    let (width, height, stride) = (37, 11, 3 * 37 + 5);
    let data = Lcg(3).vec(stride * height, |v| v as u8, 256);
    let mut ctx = Context::new().unwrap();
    let image = ImageRef::with_stride(&data, width, height, 3, stride).unwrap();
    let hist = ctx.histogram_image(&HistogramParams::new(256), &image).unwrap();
    let raw = RawData { data: &data, width, height, channels: 3, stride_bytes: stride };
    let (status, c_hist, c_uncounted) = c_histogram(sys::GPK_U8, &raw, 256, 0.0, 256.0, 0);
    assert_eq!(status, sys::GPK_OK);
    assert_eq!(hist.counts(), &c_hist[..]);
    assert_eq!(hist.uncounted(), &c_uncounted[..]);
    assert_eq!(hist.channels(), 3);
    for c in 0..3 {
        assert_eq!(hist.channel(c).iter().sum::<u64>(), (width * height) as u64);
    }
}

#[test]
fn u32_saturating_histogram_equals_c() {
    let ids = Lcg(4).vec(5000, |v| v as u32, 1100);
    let mut ctx = Context::new().unwrap();
    let hist = ctx.histogram(&HistogramParams::new(1024).saturate(6), &ids).unwrap();
    let raw = RawData { data: &ids, width: ids.len(), height: 1, channels: 1, stride_bytes: 0 };
    let (status, c_hist, c_uncounted) = c_histogram(sys::GPK_U32, &raw, 1024, 0.0, 1024.0, 6);
    assert_eq!(status, sys::GPK_OK);
    assert_eq!(hist.counts(), &c_hist[..]);
    assert_eq!(hist.uncounted(), &c_uncounted[..]);
    assert_eq!(*hist.counts().iter().max().unwrap(), 6);
    assert!(hist.uncounted()[0] > 0, "ids >= 1024 are not counted");
}

#[test]
fn float_and_signed_histograms_with_ranges_equal_c() {
    let mut rng = Lcg(5);
    let mut values = rng.vec(3000, |v| v as f64 / 1000.0 - 1.5, 3001);
    values[7] = f64::NAN;
    values[9] = 1.0;
    let mut ctx = Context::new().unwrap();
    let params = HistogramParams::new(10).range(-1.0, 1.0);
    let hist = ctx.histogram(&params, &values).unwrap();
    let raw = RawData { data: &values, width: values.len(), height: 1, channels: 1, stride_bytes: 0 };
    let (_, c_hist, c_uncounted) = c_histogram(sys::GPK_F64, &raw, 10, -1.0, 1.0, 0);
    assert_eq!((hist.counts(), hist.uncounted()), (&c_hist[..], &c_uncounted[..]));
    assert_eq!(hist.counts().iter().sum::<u64>() + hist.uncounted()[0], 3000);

    let signed = rng.vec(4000, |v| v as i32 - 500, 1000);
    let hist = ctx.histogram(&HistogramParams::new(25).range(-250.0, 250.0), &signed).unwrap();
    let raw = RawData { data: &signed, width: signed.len(), height: 1, channels: 1, stride_bytes: 0 };
    let (_, c_hist, c_uncounted) = c_histogram(sys::GPK_I32, &raw, 25, -250.0, 250.0, 0);
    assert_eq!((hist.counts(), hist.uncounted()), (&c_hist[..], &c_uncounted[..]));

    let pairs = rng.vec(2 * 900, |v| v as u16, 65536);
    let image = ImageRef::new(&pairs, 900, 1, 2).unwrap();
    let hist = ctx.histogram_image(&HistogramParams::new(16).range(0.0, 65536.0), &image).unwrap();
    let raw = RawData { data: &pairs, width: 900, height: 1, channels: 2, stride_bytes: 0 };
    let (_, c_hist, _) = c_histogram(sys::GPK_U16, &raw, 16, 0.0, 65536.0, 0);
    assert_eq!(hist.counts(), &c_hist[..]);

    let rgba = rng.vec(4 * 20 * 9, |v| v as f32 / 100.0, 1000);
    let image = ImageRef::new(&rgba, 20, 9, 4).unwrap();
    let hist = ctx.histogram_image(&HistogramParams::new(8).range(0.0, 8.0).saturate(20), &image).unwrap();
    let raw = RawData { data: &rgba, width: 20, height: 9, channels: 4, stride_bytes: 0 };
    let (_, c_hist, c_uncounted) = c_histogram(sys::GPK_F32, &raw, 8, 0.0, 8.0, 20);
    assert_eq!((hist.counts(), hist.uncounted()), (&c_hist[..], &c_uncounted[..]));
}

fn raw_convolve(width: usize, height: usize, channels: u32) -> RawConvolve {
    RawConvolve {
        width,
        height,
        channels,
        border: sys::GPK_BORDER_CLAMP,
        normalize: sys::GPK_NORMALIZE_NONE,
        accumulate: sys::GPK_ACCUMULATE_AUTO,
    }
}

#[test]
fn named_filters_on_u8_equal_c() {
    let (width, height) = (23, 17);
    let grey = Lcg(6).vec(width * height, |v| v as u8, 256);
    let mut ctx = Context::new().unwrap();
    for name in ["identity", "lp3", "lp5", "log9", "smooth5", "box:5", "gauss:1.5"] {
        let filter = Filter::named(name).unwrap();
        let params = ConvolveParams::new(&filter).border(Border::Zero).normalize(Normalize::MinMax);
        let mut out = vec![0u8; width * height];
        ctx.convolve(
            &params,
            &ImageRef::new(&grey, width, height, 1).unwrap(),
            &mut ImageMut::new(&mut out, width, height, 1).unwrap(),
        )
        .unwrap();
        let raw = RawConvolve {
            border: sys::GPK_BORDER_ZERO,
            normalize: sys::GPK_NORMALIZE_MINMAX,
            ..raw_convolve(width, height, 1)
        };
        let (status, c_out) = raw.run::<u8, u8>(&RawFilter::named(name), sys::GPK_U8, &grey, sys::GPK_U8);
        assert_eq!(status, sys::GPK_OK, "{name}");
        assert_eq!(out, c_out, "{name}");
    }
}

#[test]
fn mixed_types_borders_and_precisions_equal_c() {
    let (width, height) = (19, 13);
    let mut rng = Lcg(7);
    let mut ctx = Context::new().unwrap();

    let rgb = rng.vec(3 * width * height, |v| v as u8, 256);
    let smooth5 = Filter::named("smooth5").unwrap();
    let mut out = vec![0f32; 3 * width * height];
    let params = ConvolveParams::new(&smooth5).normalize(Normalize::Sum);
    ctx.convolve(
        &params,
        &ImageRef::new(&rgb, width, height, 3).unwrap(),
        &mut ImageMut::new(&mut out, width, height, 3).unwrap(),
    )
    .unwrap();
    let raw = RawConvolve { normalize: sys::GPK_NORMALIZE_SUM, ..raw_convolve(width, height, 3) };
    let (_, c_out) = raw.run::<u8, f32>(&RawFilter::named("smooth5"), sys::GPK_U8, &rgb, sys::GPK_F32);
    assert_eq!(out, c_out);

    let field = rng.vec(width * height, |v| v as f32 / 7.0, 1000);
    let gauss = Filter::named("gauss:1.5").unwrap();
    let mut out = vec![0f32; width * height];
    let params = ConvolveParams::new(&gauss).border(Border::Mirror).accumulate(Accumulate::F32);
    ctx.convolve(
        &params,
        &ImageRef::new(&field, width, height, 1).unwrap(),
        &mut ImageMut::new(&mut out, width, height, 1).unwrap(),
    )
    .unwrap();
    let raw = RawConvolve {
        border: sys::GPK_BORDER_MIRROR,
        accumulate: sys::GPK_ACCUMULATE_F32,
        ..raw_convolve(width, height, 1)
    };
    let (_, c_out) = raw.run::<f32, f32>(&RawFilter::named("gauss:1.5"), sys::GPK_F32, &field, sys::GPK_F32);
    assert_eq!(out, c_out);

    let wide = rng.vec(2 * width * height, |v| v as f64 - 2000.5, 70000);
    let box3 = Filter::named("box:3").unwrap();
    let mut out = vec![0u16; 2 * width * height];
    let params = ConvolveParams::new(&box3).border(Border::Wrap);
    ctx.convolve(
        &params,
        &ImageRef::new(&wide, width, height, 2).unwrap(),
        &mut ImageMut::new(&mut out, width, height, 2).unwrap(),
    )
    .unwrap();
    let raw = RawConvolve { border: sys::GPK_BORDER_WRAP, ..raw_convolve(width, height, 2) };
    let (_, c_out) = raw.run::<f64, u16>(&RawFilter::named("box:3"), sys::GPK_F64, &wide, sys::GPK_U16);
    assert_eq!(out, c_out);
}

#[test]
fn custom_2d_taps_into_a_padded_output_equal_c() {
    let (width, height, kh, kw) = (19, 13, 3, 5);
    let taps: Vec<f64> = (0..kh * kw).map(|i| ((i * 5 + 3) % 7) as f64 - 3.0).collect();
    let image = Lcg(8).vec(width * height, |v| v as u16, 65536);
    let filter = Filter::new_2d(kh, kw, &taps).unwrap();
    assert_eq!(
        filter.info(),
        FilterInfo { separable: false, kh, kw, sum: taps.iter().sum(), integer_taps: true }
    );
    assert_eq!(filter.taps(), taps);
    let stride = width + 3;
    let mut out = vec![-1.0f64; stride * height];
    let mut ctx = Context::new().unwrap();
    let params = ConvolveParams::new(&filter).border(Border::Reflect);
    ctx.convolve(
        &params,
        &ImageRef::new(&image, width, height, 1).unwrap(),
        &mut ImageMut::with_stride(&mut out, width, height, 1, stride).unwrap(),
    )
    .unwrap();
    let raw = RawConvolve { border: sys::GPK_BORDER_REFLECT, ..raw_convolve(width, height, 1) };
    let (_, c_out) =
        raw.run::<u16, f64>(&RawFilter::taps_2d(kh, kw, &taps), sys::GPK_U16, &image, sys::GPK_F64);
    for y in 0..height {
        assert_eq!(&out[y * stride..y * stride + width], &c_out[y * width..(y + 1) * width]);
        assert!(out[y * stride + width..(y + 1) * stride].iter().all(|&v| v == -1.0), "padding untouched");
    }

    let copy = filter.clone();
    drop(filter);
    let mut again = vec![0.0f64; width * height];
    ctx.convolve(
        &ConvolveParams::new(&copy).border(Border::Reflect),
        &ImageRef::new(&image, width, height, 1).unwrap(),
        &mut ImageMut::new(&mut again, width, height, 1).unwrap(),
    )
    .unwrap();
    assert_eq!(again, c_out, "a cloned filter outlives the original and filters the same");
}

#[test]
fn separable_filter_equals_c_and_reports_its_shape() {
    let row = [1.0, 2.0, 1.0];
    let col = [1.0, 0.0, -1.0, 2.0, 5.0];
    let filter = Filter::separable(&row, &col).unwrap();
    let info = filter.info();
    assert!(info.separable && info.kw == 3 && info.kh == 5 && info.sum == 4.0 * 7.0);
    assert_eq!(filter.taps(), [&row[..], &col[..]].concat());
}
