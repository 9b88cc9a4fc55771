!> Prints the layout of the module's bind(c) mirrors of gpk.h's structs, as the C probe prints the header's
!> (bindings/rust/gpk-sys/tests/layout_probe.c): "size T n", "offset T.f n" and "fieldsize T.f n" a line,
!> named as in C, for bindings/check_layouts.py to compare.
program layout
    use, intrinsic :: iso_c_binding
    use gpk, only: gpk_heat_report, c_context_options, c_heat_params, c_histogram_params, c_filter_info, &
                   c_image, c_convolve_params
    implicit none
    type(gpk_heat_report), target :: report
    type(c_context_options), target :: options
    type(c_heat_params), target :: heat
    type(c_histogram_params), target :: histogram
    type(c_filter_info), target :: info
    type(c_image), target :: image
    type(c_convolve_params), target :: convolve

    call size_of('gpk_heat_report', c_sizeof(report))
    call field('gpk_heat_report', 'niter', c_loc(report), c_loc(report%niter), storage_size(report%niter))
    call field('gpk_heat_report', 'tmin', c_loc(report), c_loc(report%tmin), storage_size(report%tmin))
    call field('gpk_heat_report', 'tmax', c_loc(report), c_loc(report%tmax), storage_size(report%tmax))
    call field('gpk_heat_report', 'maxdiff', c_loc(report), c_loc(report%maxdiff), storage_size(report%maxdiff))
    call field('gpk_heat_report', 'tavg', c_loc(report), c_loc(report%tavg), storage_size(report%tavg))
    call field('gpk_heat_report', 'time', c_loc(report), c_loc(report%time), storage_size(report%time))

    call size_of('gpk_context_options', c_sizeof(options))
    call field('gpk_context_options', 'struct_size', c_loc(options), c_loc(options%struct_size), &
               storage_size(options%struct_size))
    call field('gpk_context_options', 'backend', c_loc(options), c_loc(options%backend), storage_size(options%backend))
    call field('gpk_context_options', 'device', c_loc(options), c_loc(options%device), storage_size(options%device))
    call field('gpk_context_options', 'stream', c_loc(options), c_loc(options%stream), storage_size(options%stream))
    call field('gpk_context_options', 'threads', c_loc(options), c_loc(options%threads), storage_size(options%threads))

    call size_of('gpk_heat_params', c_sizeof(heat))
    call field('gpk_heat_params', 'struct_size', c_loc(heat), c_loc(heat%struct_size), storage_size(heat%struct_size))
    call field('gpk_heat_params', 'rows', c_loc(heat), c_loc(heat%rows), storage_size(heat%rows))
    call field('gpk_heat_params', 'cols', c_loc(heat), c_loc(heat%cols), storage_size(heat%cols))
    call field('gpk_heat_params', 'maxiter', c_loc(heat), c_loc(heat%maxiter), storage_size(heat%maxiter))
    call field('gpk_heat_params', 'threshold', c_loc(heat), c_loc(heat%threshold), storage_size(heat%threshold))
    call field('gpk_heat_params', 'period', c_loc(heat), c_loc(heat%period), storage_size(heat%period))
    call field('gpk_heat_params', 'on_report', c_loc(heat), c_loc(heat%on_report), storage_size(heat%on_report))
    call field('gpk_heat_params', 'on_progress', c_loc(heat), c_loc(heat%on_progress), &
               storage_size(heat%on_progress))
    call field('gpk_heat_params', 'progress_interval', c_loc(heat), c_loc(heat%progress_interval), &
               storage_size(heat%progress_interval))
    call field('gpk_heat_params', 'user_data', c_loc(heat), c_loc(heat%user_data), storage_size(heat%user_data))
    call field('gpk_heat_params', 'start_iteration', c_loc(heat), c_loc(heat%start_iteration), &
               storage_size(heat%start_iteration))
    call field('gpk_heat_params', 'fixed_rows', c_loc(heat), c_loc(heat%fixed_rows), storage_size(heat%fixed_rows))
    call field('gpk_heat_params', 'on_checkpoint', c_loc(heat), c_loc(heat%on_checkpoint), &
               storage_size(heat%on_checkpoint))
    call field('gpk_heat_params', 'checkpoint_interval', c_loc(heat), c_loc(heat%checkpoint_interval), &
               storage_size(heat%checkpoint_interval))

    call size_of('gpk_histogram_params', c_sizeof(histogram))
    call field('gpk_histogram_params', 'struct_size', c_loc(histogram), c_loc(histogram%struct_size), &
               storage_size(histogram%struct_size))
    call field('gpk_histogram_params', 'dtype', c_loc(histogram), c_loc(histogram%dtype), storage_size(histogram%dtype))
    call field('gpk_histogram_params', 'width', c_loc(histogram), c_loc(histogram%width), storage_size(histogram%width))
    call field('gpk_histogram_params', 'height', c_loc(histogram), c_loc(histogram%height), &
               storage_size(histogram%height))
    call field('gpk_histogram_params', 'channels', c_loc(histogram), c_loc(histogram%channels), &
               storage_size(histogram%channels))
    call field('gpk_histogram_params', 'stride', c_loc(histogram), c_loc(histogram%stride), &
               storage_size(histogram%stride))
    call field('gpk_histogram_params', 'bins', c_loc(histogram), c_loc(histogram%bins), storage_size(histogram%bins))
    call field('gpk_histogram_params', 'lower', c_loc(histogram), c_loc(histogram%lower), storage_size(histogram%lower))
    call field('gpk_histogram_params', 'upper', c_loc(histogram), c_loc(histogram%upper), storage_size(histogram%upper))
    call field('gpk_histogram_params', 'saturate', c_loc(histogram), c_loc(histogram%saturate), &
               storage_size(histogram%saturate))

    call size_of('gpk_filter_info', c_sizeof(info))
    call field('gpk_filter_info', 'struct_size', c_loc(info), c_loc(info%struct_size), storage_size(info%struct_size))
    call field('gpk_filter_info', 'separable', c_loc(info), c_loc(info%separable), storage_size(info%separable))
    call field('gpk_filter_info', 'kh', c_loc(info), c_loc(info%kh), storage_size(info%kh))
    call field('gpk_filter_info', 'kw', c_loc(info), c_loc(info%kw), storage_size(info%kw))
    call field('gpk_filter_info', 'sum', c_loc(info), c_loc(info%sum), storage_size(info%sum))
    call field('gpk_filter_info', 'integer_taps', c_loc(info), c_loc(info%integer_taps), &
               storage_size(info%integer_taps))

    call size_of('gpk_image', c_sizeof(image))
    call field('gpk_image', 'struct_size', c_loc(image), c_loc(image%struct_size), storage_size(image%struct_size))
    call field('gpk_image', 'dtype', c_loc(image), c_loc(image%dtype), storage_size(image%dtype))
    call field('gpk_image', 'width', c_loc(image), c_loc(image%width), storage_size(image%width))
    call field('gpk_image', 'height', c_loc(image), c_loc(image%height), storage_size(image%height))
    call field('gpk_image', 'channels', c_loc(image), c_loc(image%channels), storage_size(image%channels))
    call field('gpk_image', 'stride', c_loc(image), c_loc(image%stride), storage_size(image%stride))

    call size_of('gpk_convolve_params', c_sizeof(convolve))
    call field('gpk_convolve_params', 'struct_size', c_loc(convolve), c_loc(convolve%struct_size), &
               storage_size(convolve%struct_size))
    call field('gpk_convolve_params', 'filter', c_loc(convolve), c_loc(convolve%filter), storage_size(convolve%filter))
    call field('gpk_convolve_params', 'border', c_loc(convolve), c_loc(convolve%border), storage_size(convolve%border))
    call field('gpk_convolve_params', 'normalize', c_loc(convolve), c_loc(convolve%normalize), &
               storage_size(convolve%normalize))
    call field('gpk_convolve_params', 'accumulate', c_loc(convolve), c_loc(convolve%accumulate), &
               storage_size(convolve%accumulate))

contains

    subroutine size_of(struct, bytes)
        character(*), intent(in) :: struct
        integer(c_size_t), intent(in) :: bytes
        print '(a, " ", a, " ", i0)', 'size', struct, bytes
    end subroutine

    ! The field's offset (its address less the struct's) and size (storage_size is in bits).
    subroutine field(struct, name, base, at, bits)
        character(*), intent(in) :: struct, name
        type(c_ptr), intent(in) :: base, at
        integer, intent(in) :: bits
        integer(c_intptr_t) :: b, a
        b = transfer(base, b)
        a = transfer(at, a)
        print '(a, " ", a, ".", a, " ", i0)', 'offset', struct, name, a - b
        print '(a, " ", a, ".", a, " ", i0)', 'fieldsize', struct, name, bits / 8
    end subroutine

end program
