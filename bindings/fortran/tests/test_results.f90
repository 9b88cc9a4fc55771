!> The Fortran binding gives the C API's results on the same inputs: heat (and its array layout),
!> histograms of every sample kind, convolutions with named, separable and 2D filters.
program test_results
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64
    use gpk
    use checks
    implicit none

    integer(c_int), parameter :: U8 = 0, U16 = 1, U32 = 2, F32 = 4, F64 = 5

    interface
        real(c_double) function ref_temperature(row, col) bind(c)
            import :: c_double, c_size_t
            integer(c_size_t), value :: row, col
        end function
        real(c_double) function ref_conductivity(row, col) bind(c)
            import :: c_double, c_size_t
            integer(c_size_t), value :: row, col
        end function
        real(c_double) function ref_tap(a, b) bind(c)
            import :: c_double, c_size_t
            integer(c_size_t), value :: a, b
        end function
        integer(c_int) function ref_heat(rows, cols, maxiter, threshold, period, tfinal, final, periodic, &
                                         capacity, count) bind(c)
            import :: c_int, c_size_t, c_double, gpk_heat_report
            integer(c_size_t), value :: rows, cols, maxiter, period, capacity
            real(c_double), value :: threshold
            real(c_double), intent(out) :: tfinal(*)
            type(gpk_heat_report), intent(inout) :: final, periodic(*)
            integer(c_size_t), intent(out) :: count
        end function
        integer(c_int) function ref_histogram(dtype, data, width, height, channels, stride, bins, lower, upper, &
                                              saturate, hist, uncounted) bind(c)
            import :: c_int, c_ptr, c_size_t, c_double, c_int64_t
            integer(c_int), value :: dtype, channels
            type(c_ptr), value :: data
            integer(c_size_t), value :: width, height, stride, bins
            real(c_double), value :: lower, upper
            integer(c_int64_t), value :: saturate
            integer(c_int64_t), intent(out) :: hist(*), uncounted(*)
        end function
        integer(c_int) function ref_convolve(name, kh, kw, border, normalize, accumulate, in_dtype, in, &
                                             out_dtype, out, width, height, channels) bind(c)
            import :: c_int, c_ptr, c_size_t, c_char
            character(kind=c_char), intent(in), optional :: name(*)
            integer(c_size_t), value :: kh, kw, width, height
            integer(c_int), value :: border, normalize, accumulate, in_dtype, out_dtype, channels
            type(c_ptr), value :: in, out
        end function
    end interface

    call test_heat_layout_and_reports()
    call test_heat_converges()
    call test_histograms()
    call test_padded_histogram()
    call test_convolutions()
    call test_2d_taps_layout()
    call finish('fortran results')

contains

    !> A pseudo-random integer in [0, n), reproducible.
    integer function next_random(state, n)
        integer(int64), intent(inout) :: state
        integer, intent(in) :: n

        state = modulo(state*6364136223846793005_int64 + 1442695040888963407_int64, huge(state))
        next_random = int(modulo(state/65536, int(n, int64)))
    end function

    !> The grid of the formulas in the binding's layout: t(j, i) is row i, column j.
    subroutine formula_grid(rows, cols, tinit, conductivity)
        integer, intent(in) :: rows, cols
        real(c_double), intent(out) :: tinit(cols, rows), conductivity(cols, rows)
        integer :: i, j

        do i = 1, rows
            do j = 1, cols
                tinit(j, i) = ref_temperature(int(i - 1, c_size_t), int(j - 1, c_size_t))
                conductivity(j, i) = ref_conductivity(int(i - 1, c_size_t), int(j - 1, c_size_t))
            end do
        end do
    end subroutine

    logical function same_report(a, b)
        type(gpk_heat_report), intent(in) :: a, b
        same_report = a%niter == b%niter .and. a%tmin == b%tmin .and. a%tmax == b%tmax .and. &
                      a%maxdiff == b%maxdiff .and. a%tavg == b%tavg
    end function

    subroutine test_heat_layout_and_reports()
        integer, parameter :: rows = 7, cols = 5
        real(c_double) :: tinit(cols, rows), conductivity(cols, rows), tfinal(cols, rows), c_tfinal(cols*rows)
        type(gpk_heat_report) :: report, c_report, c_periodic(16)
        type(gpk_heat_report), allocatable :: history(:)
        integer(c_size_t) :: c_count
        type(gpk_context) :: ctx
        integer :: k

        call formula_grid(rows, cols, tinit, conductivity)
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_ok(ctx%heat(tinit, conductivity, tfinal, maxiter=60, period=10, report=report, history=history, &
                            errmsg=msg), 'heat')
        call check(ref_heat(int(rows, c_size_t), int(cols, c_size_t), 60_c_size_t, 0.0_c_double, 10_c_size_t, &
                            c_tfinal, c_report, c_periodic, 16_c_size_t, c_count) == GPK_OK, 'C heat')
        ! The C grid is row-major rows x cols; the Fortran one must be the same memory.
        call check(all(tfinal == reshape(c_tfinal, [cols, rows])), 'heat grid equals the C grid')
        call check(same_report(report, c_report), 'heat final report equals C')
        call check(report%niter == 60, 'heat ran maxiter iterations')
        call check(size(history) == int(c_count) .and. size(history) == 6, 'heat periodic report count')
        do k = 1, min(size(history), 6)
            call check(same_report(history(k), c_periodic(k)), 'heat periodic report equals C')
        end do
    end subroutine

    subroutine test_heat_converges()
        integer, parameter :: rows = 12, cols = 9
        real(c_double) :: tinit(cols, rows), conductivity(cols, rows), tfinal(cols, rows), c_tfinal(cols*rows)
        type(gpk_heat_report) :: report, c_report, c_periodic(1)
        integer(c_size_t) :: c_count
        type(gpk_context) :: ctx

        call formula_grid(rows, cols, tinit, conductivity)
        call check_ok(ctx%create(backend=GPK_BACKEND_AUTO, threads=2, errmsg=msg), 'create')
        call check_ok(ctx%heat(tinit, conductivity, tfinal, maxiter=100000, threshold=1e-3_c_double, report=report, &
                            errmsg=msg), 'heat to convergence')
        call check(ref_heat(int(rows, c_size_t), int(cols, c_size_t), 100000_c_size_t, 1e-3_c_double, &
                            0_c_size_t, c_tfinal, c_report, c_periodic, 1_c_size_t, c_count) == GPK_OK, 'C heat')
        call check(report%niter < 100000 .and. report%maxdiff < 1e-3_c_double, 'heat converged')
        call check(same_report(report, c_report), 'converged report equals C')
        call check(all(tfinal == reshape(c_tfinal, [cols, rows])), 'converged grid equals C')
    end subroutine

    subroutine test_histograms()
        integer, parameter :: width = 37, height = 11, n = 3000
        integer(int8), target :: rgb(3*width, height)
        integer(int16), target :: pairs(2*n)
        real(real64), target :: values(n)
        real(real32), target :: rgba(4*width, height)
        integer(int64) :: hist(3*256), c_hist(3*256), uncounted(4), c_uncounted(4)
        integer(int64) :: hist16(2*16), c_hist16(2*16), hist64(10), c_hist64(10), hist32(4*8), c_hist32(4*8)
        integer(int64) :: state = 42
        type(gpk_context) :: ctx
        integer :: i, j, byte

        call check_ok(ctx%create(errmsg=msg), 'create')
        do j = 1, height
            do i = 1, 3*width
                byte = next_random(state, 256)
                rgb(i, j) = int(merge(byte - 256, byte, byte > 127), int8)
                rgba(i, j) = real(next_random(state, 1000), real32)/100.0_real32 - 1.0_real32
            end do
            do i = 3*width + 1, 4*width
                rgba(i, j) = real(next_random(state, 1000), real32)/100.0_real32
            end do
        end do
        do i = 1, 2*n
            pairs(i) = int(next_random(state, 65536) - 32768, int16)
        end do
        do i = 1, n
            values(i) = real(next_random(state, 30001), real64)/10000.0_real64 - 1.5_real64
        end do
        values(7) = ieee_nan()
        values(99) = 1.0_real64

        call check_ok(ctx%histogram(rgb, hist, channels=3, uncounted=uncounted(1:3), errmsg=msg), 'u8 RGB histogram')
        call check(ref_histogram(U8, c_loc(rgb), int(width, c_size_t), int(height, c_size_t), 3_c_int, &
                                 0_c_size_t, 256_c_size_t, 0.0_c_double, 256.0_c_double, 0_c_int64_t, c_hist, &
                                 c_uncounted) == GPK_OK, 'C u8 histogram')
        call check(all(hist == c_hist) .and. all(uncounted(1:3) == c_uncounted(1:3)), 'u8 RGB equals C')
        call check(sum(hist) == 3*width*height, 'u8 RGB counts every sample')

        call check_ok(ctx%histogram(pairs, hist16, channels=2, lower=0.0_real64, upper=65536.0_real64, &
                                 errmsg=msg), 'u16 histogram')
        call check(ref_histogram(U16, c_loc(pairs), int(n, c_size_t), 1_c_size_t, 2_c_int, 0_c_size_t, &
                                 16_c_size_t, 0.0_c_double, 65536.0_c_double, 0_c_int64_t, c_hist16, c_uncounted) &
                   == GPK_OK, 'C u16 histogram')
        call check(all(hist16 == c_hist16) .and. sum(hist16) == 2*n, 'u16 pairs equal C')

        call check_ok(ctx%histogram(values, hist64, lower=-1.0_real64, upper=1.0_real64, uncounted=uncounted(1:1), &
                                 errmsg=msg), 'f64 histogram')
        call check(ref_histogram(F64, c_loc(values), int(n, c_size_t), 1_c_size_t, 1_c_int, 0_c_size_t, &
                                 10_c_size_t, -1.0_c_double, 1.0_c_double, 0_c_int64_t, c_hist64, c_uncounted) &
                   == GPK_OK, 'C f64 histogram')
        call check(all(hist64 == c_hist64) .and. uncounted(1) == c_uncounted(1), 'f64 equals C')
        call check(uncounted(1) > 1 .and. sum(hist64) + uncounted(1) == n, 'f64 leaves NaN and outliers out')

        call check_ok(ctx%histogram(rgba, hist32, channels=4, lower=-1.0_real64, upper=9.0_real64, &
                                 saturate=20_int64, errmsg=msg), 'f32 histogram')
        call check(ref_histogram(F32, c_loc(rgba), int(width, c_size_t), int(height, c_size_t), 4_c_int, &
                                 0_c_size_t, 8_c_size_t, -1.0_c_double, 9.0_c_double, 20_c_int64_t, c_hist32, &
                                 c_uncounted) == GPK_OK, 'C f32 histogram')
        call check(all(hist32 == c_hist32) .and. maxval(hist32) == 20, 'f32 RGBA saturated equals C')
    end subroutine

    function ieee_nan() result(nan)
        use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan
        real(real64) :: nan
        nan = ieee_value(nan, ieee_quiet_nan)
    end function

    !> The lab's case in small: u32 bin IDs in rows padded to a pitch; the padding is not counted.
    subroutine test_padded_histogram()
        integer, parameter :: pitch = 64, width = 50, height = 20
        integer(int32), target :: ids(pitch, height)
        integer(int64) :: hist(64), c_hist(64), uncounted(1), c_uncounted(1)
        integer(int64) :: state = 7
        type(gpk_context) :: ctx
        integer :: i, j

        do j = 1, height
            do i = 1, width
                ids(i, j) = next_random(state, 64)
            end do
            ids(width + 1:, j) = 5 ! padding that would count if it were read
        end do
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_ok(ctx%histogram(ids, hist, width=width, saturate=12_int64, unsigned=.true., &
                                 uncounted=uncounted, errmsg=msg), 'u32 padded histogram')
        call check(ref_histogram(U32, c_loc(ids), int(width, c_size_t), int(height, c_size_t), 1_c_int, &
                                 int(4*pitch, c_size_t), 64_c_size_t, 0.0_c_double, 64.0_c_double, 12_c_int64_t, &
                                 c_hist, c_uncounted) == GPK_OK, 'C u32 histogram')
        call check(all(hist == c_hist) .and. uncounted(1) == c_uncounted(1), 'u32 padded equals C')
        call check(maxval(hist) == 12 .and. hist(6) == min(12, count(ids(1:width, :) == 5)), &
                   'u32 padding not counted, counts saturate')
    end subroutine

    subroutine test_convolutions()
        integer, parameter :: width = 23, height = 17
        integer(int8), target :: grey(width, height), lap(width, height), c_lap(width, height)
        integer(int8), target :: rgb(3*width, height)
        real(real32), target :: smooth(3*width, height), c_smooth(3*width, height)
        real(real32), target :: field(width, height), blurred(width, height), c_blurred(width, height)
        real(real64), target :: wide(2*width, height)
        integer(int16), target :: boxed(2*width, height), c_boxed(2*width, height)
        integer(int64) :: state = 3
        type(gpk_context) :: ctx
        type(gpk_filter) :: lp3, smooth5, gauss, box3
        integer :: i, j, byte

        do j = 1, height
            do i = 1, width
                byte = next_random(state, 256)
                grey(i, j) = int(merge(byte - 256, byte, byte > 127), int8)
                field(i, j) = real(next_random(state, 1000), real32)/7.0_real32
            end do
            do i = 1, 3*width
                byte = next_random(state, 256)
                rgb(i, j) = int(merge(byte - 256, byte, byte > 127), int8)
            end do
            do i = 1, 2*width
                wide(i, j) = real(next_random(state, 70000), real64) - 2000.5_real64
            end do
        end do
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_ok(lp3%create_named('lp3', msg), 'lp3')
        call check_ok(smooth5%create_named('smooth5', msg), 'smooth5')
        call check_ok(gauss%create_named('gauss:1.5', msg), 'gauss')
        call check_ok(box3%create_named('box:3', msg), 'box')

        call check_ok(ctx%convolve(lp3, grey, lap, border=GPK_BORDER_ZERO, normalize=GPK_NORMALIZE_MINMAX, &
                                errmsg=msg), 'u8 Laplacian')
        call check(ref_convolve('lp3'//c_null_char, 0_c_size_t, 0_c_size_t, GPK_BORDER_ZERO, GPK_NORMALIZE_MINMAX, &
                                GPK_ACCUMULATE_AUTO, U8, c_loc(grey), U8, c_loc(c_lap), int(width, c_size_t), &
                                int(height, c_size_t), 1_c_int) == GPK_OK, 'C Laplacian')
        call check(all(lap == c_lap), 'u8 Laplacian with minmax equals C')

        call check_ok(ctx%convolve(smooth5, rgb, smooth, channels=3, normalize=GPK_NORMALIZE_SUM, errmsg=msg), &
                      'u8 RGB smoothing to f32')
        call check(ref_convolve('smooth5'//c_null_char, 0_c_size_t, 0_c_size_t, GPK_BORDER_CLAMP, &
                                GPK_NORMALIZE_SUM, GPK_ACCUMULATE_AUTO, U8, c_loc(rgb), F32, c_loc(c_smooth), &
                                int(width, c_size_t), int(height, c_size_t), 3_c_int) == GPK_OK, 'C smoothing')
        call check(all(smooth == c_smooth), 'u8 RGB smoothing to f32 equals C')

        call check_ok(ctx%convolve(gauss, field, blurred, border=GPK_BORDER_MIRROR, accumulate=GPK_ACCUMULATE_F32, &
                                errmsg=msg), 'f32 Gaussian')
        call check(ref_convolve('gauss:1.5'//c_null_char, 0_c_size_t, 0_c_size_t, GPK_BORDER_MIRROR, &
                                GPK_NORMALIZE_NONE, GPK_ACCUMULATE_F32, F32, c_loc(field), F32, c_loc(c_blurred), &
                                int(width, c_size_t), int(height, c_size_t), 1_c_int) == GPK_OK, 'C Gaussian')
        call check(all(blurred == c_blurred), 'f32 separable Gaussian equals C')

        call check_ok(ctx%convolve(box3, wide, boxed, channels=2, border=GPK_BORDER_WRAP, errmsg=msg), 'f64 box to u16')
        call check(ref_convolve('box:3'//c_null_char, 0_c_size_t, 0_c_size_t, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE, &
                                GPK_ACCUMULATE_AUTO, F64, c_loc(wide), U16, c_loc(c_boxed), int(width, c_size_t), &
                                int(height, c_size_t), 2_c_int) == GPK_OK, 'C box')
        call check(all(boxed == c_boxed), 'f64 box to saturated u16 equals C')
    end subroutine

    !> taps(kw, kh) holds f(a, b) at taps(b, a): built from the formula, the result equals C's.
    subroutine test_2d_taps_layout()
        integer, parameter :: width = 19, height = 13, kh = 3, kw = 5
        integer(int16), target :: image(width, height)
        real(real64), target :: out(width, height), c_out(width, height)
        real(c_double) :: taps(kw, kh)
        integer(int64) :: state = 11
        type(gpk_context) :: ctx
        type(gpk_filter) :: filter, copy
        type(gpk_filter_shape) :: info
        real(c_double), allocatable :: copied(:)
        integer :: a, b, i, j

        do a = 1, kh
            do b = 1, kw
                taps(b, a) = ref_tap(int(a - 1, c_size_t), int(b - 1, c_size_t))
            end do
        end do
        do j = 1, height
            do i = 1, width
                image(i, j) = int(next_random(state, 65536) - 32768, int16)
            end do
        end do
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_ok(filter%create_2d(taps, msg), 'create_2d')
        call check(filter%shape(info) == GPK_OK, 'filter shape')
        call check(info%kh == kh .and. info%kw == kw .and. .not. info%separable .and. info%integer_taps, &
                   'filter shape is kh x kw with integer taps')
        call check_ok(ctx%convolve(filter, image, out, border=GPK_BORDER_REFLECT, errmsg=msg), 'u16 2D taps')
        call check(ref_convolve(kh=int(kh, c_size_t), kw=int(kw, c_size_t), border=GPK_BORDER_REFLECT, &
                                normalize=GPK_NORMALIZE_NONE, accumulate=GPK_ACCUMULATE_AUTO, in_dtype=U16, &
                                in=c_loc(image), out_dtype=F64, out=c_loc(c_out), width=int(width, c_size_t), &
                                height=int(height, c_size_t), channels=1_c_int) == GPK_OK, 'C 2D taps')
        call check(all(out == c_out), 'u16 with 2D taps equals C')

        copy = filter
        call check(copy%is_created(), 'a copied filter exists')
        call check(copy%taps(copied) == GPK_OK, 'copied taps')
        call check(size(copied) == kh*kw, 'copied tap count')
        if (size(copied) == kh*kw) call check(all(copied == reshape(taps, [kh*kw])), 'copied taps equal')
        call filter%destroy()
        out = 0
        call check(ctx%convolve(copy, image, out, border=GPK_BORDER_REFLECT) == GPK_OK, 'the copy outlives the original')
        call check(all(out == c_out), 'the copy filters the same')
    end subroutine

end program test_results
