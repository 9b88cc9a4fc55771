"""gpk.Error and one subclass per gpk_status of gpk.h."""


class Error(Exception):
    """A failing gpk call. `status` is the gpk_status value, `message` the library's message naming the
    argument and the value at fault (also ``str(error)``).

    Each status has its own subclass, so ``except gpk.InvalidArgumentError`` catches exactly those. Some
    also derive from the matching built-in exception (``ValueError``, ``MemoryError``) so that generic
    handlers work too.
    """

    status = None
    status_name = "unknown status"  # the library's gpk_status_string, set when it is loaded

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    """GPK_ERR_INVALID_ARGUMENT: an argument is missing, zero, out of range, NaN, of the wrong type or
    shape, or inconsistent with another. Raised as well for what the package checks before calling the
    library (dtypes, shapes, layouts, closed contexts)."""

    status = 1


class OutOfMemoryError(Error, MemoryError):
    """GPK_ERR_OUT_OF_MEMORY: host or device memory could not be allocated; the message gives the
    bytes asked for."""

    status = 2


class NoDeviceError(Error):
    """GPK_ERR_NO_DEVICE: the CUDA backend was asked for and no usable GPU exists."""

    status = 3


class UnsupportedError(Error):
    """GPK_ERR_UNSUPPORTED: the request is valid but beyond what gpk supports (a size limit)."""

    status = 4


class DeviceError(Error):
    """GPK_ERR_DEVICE: a CUDA call or kernel failed; the message names the CUDA error."""

    status = 5


class CancelledError(Error):
    """GPK_ERR_CANCELLED: a heat callback asked the run to stop. `result` holds the HeatResult of the
    state reached (the grid of the last iteration done and every report, the final one last)."""

    status = 6
    result = None


class InternalError(Error):
    """GPK_ERR_INTERNAL: a bug in gpk."""

    status = 7


ERRORS = {cls.status: cls for cls in (InvalidArgumentError, OutOfMemoryError, NoDeviceError, UnsupportedError,
                                      DeviceError, CancelledError, InternalError)}


def error_for(status, message):
    """The exception for a gpk_status value (a plain Error with that status for values this package does
    not know)."""
    cls = ERRORS.get(status)
    return cls(message) if cls else Error(message, status)
