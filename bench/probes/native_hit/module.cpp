// The probe's module (run.py builds it): hit.hpp's functions as ``native_hit``.
#include "hit.hpp"

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_hit", nullptr, -1, nullptr, nullptr, nullptr,
                                    nullptr, nullptr};

PyMODINIT_FUNC PyInit_native_hit(void) {
    PyObject* m = PyModule_Create(&module);
    if (m != nullptr && !dmlgpu_hit::add_to_module(m)) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
