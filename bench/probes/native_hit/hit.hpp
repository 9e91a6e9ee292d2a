// Probe (issue 53, item 2): a call template's hit queued in one C call, to measure what a native hit path over
// dmlgpu's Python objects saves. Not part of the product: run.py builds it as a module of its own and times it
// against dmlgpu's Python path (bench/RESULTS.md, "A native hit path, measured").
//
// dmlgpu (dmlgpu/api/call_templates.py) keeps, per device, call templates: the launches of a repeated eager call,
// prepared once (dmlgpu/runtime/launch.py: Prepared), whose kp ops are kept per set of blocks they bind. A hit of
// a "plain" template (no device check, no claim buffer, no scratch, no large-tensor parameters) then only takes the
// result's block from the caching allocator, appends the kept ops to the device's open batch and makes the result
// Tensor. These functions do that work here, reading and writing dmlgpu's Python objects through the attributes
// listed below, and decline (return None, having changed nothing) wherever anything else is needed.
//
//   hit_types(Tensor, Buffer)                        the two classes, once
//   hit_gathered(op, data, indices, arg, mode)       call_templates.gathered(): the template keyed by
//                                                    (op, data.shape, data.dtype, indices.shape, indices.dtype,
//                                                    arg, mode) of data's device, hit as below
//   hit_template(template, data, indices, updates, out)   Template.hit(data, indices, updates, out) of a template
//                                                    with ``plain`` (updates, out: a Tensor or None)
//   hit_release(Buffer)                              Buffer._release as a C method (to install as __del__)
//   hit_stop(k)                                      stop after stage k (0-6; 99: the whole hit), for timing
//
// The attributes read (r) and written (w), by object:
//   Tensor      r: buffer, shape, dtype, offset, _strides   (the result: w buffer, shape, dtype)
//   Buffer      r: device, chunked, _block                  (the result: w memory, device, nbytes, block_list,
//                                                            _block, _tensor)
//   Runtime     r: templates (dict), checks.tainted
//   Template    r: plain, device, out_shape
//   Prepared    r: submitter, out_nbytes, out_class, slots, sets (dict), generation, pipelines.generation
//   Submitter   r: lock (acquired without blocking: declined where another thread holds it), memory, settings
//               (max_queued, eager_submit), local.recording, batch
//   Memory      r: closed, canary_words, owner, allocator
//   Allocator   r/w: _returned (deque), _free (dict of lists), cache_hits, cached_bytes, allocated_bytes,
//               peak_allocated_bytes
//   Block       r: size, tensor; w: batch
//   Batch       r/w: ops (list, extended in place), number, queued, inflight; flush(wait=False) when full
#pragma once

#include <Python.h>

namespace dmlgpu_hit {

static PyObject* tensor_type = nullptr;
static PyObject* buffer_type = nullptr;
static Py_ssize_t hits = 0;
static int stop_at = 99;     // hit_stop(): return None (declined) at this stage
#define STAGE(k) if (stop_at <= (k)) Py_RETURN_NONE;

enum Name {
    N_buffer, N_shape, N_dtype, N_offset, N_strides, N_device, N_chunked, N_block, N_templates, N_checks,
    N_tainted, N_plain, N_out_shape, N_submitter, N_out_nbytes, N_out_class, N_slots, N_sets, N_generation,
    N_pipelines, N_lock, N_memory, N_settings, N_max_queued, N_eager_submit, N_local, N_recording, N_batch,
    N_closed, N_canary_words, N_owner, N_allocator, N_returned, N_free, N_cache_hits, N_cached_bytes,
    N_allocated_bytes, N_peak_allocated_bytes, N_size, N_tensor, N_ops, N_number, N_queued, N_inflight,
    N_flush, N_block_list, N_tensor_, N_nbytes, N_acquire, N_release, N_wait, N_append, N_COUNT
};
static const char* const name_text[N_COUNT] = {
    "buffer", "shape", "dtype", "offset", "_strides", "device", "chunked", "_block", "templates", "checks",
    "tainted", "plain", "out_shape", "submitter", "out_nbytes", "out_class", "slots", "sets", "generation",
    "pipelines", "lock", "memory", "settings", "max_queued", "eager_submit", "local", "recording", "batch",
    "closed", "canary_words", "owner", "allocator", "_returned", "_free", "cache_hits", "cached_bytes",
    "allocated_bytes", "peak_allocated_bytes", "size", "tensor", "ops", "number", "queued", "inflight",
    "flush", "block_list", "_tensor", "nbytes", "acquire", "release", "wait", "append"};
static PyObject* names[N_COUNT];

// Owned references, released at scope exit
struct Ref {
    PyObject* p = nullptr;
    Ref() = default;
    explicit Ref(PyObject* o) : p(o) {}
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(p); }
    void reset(PyObject* o) { Py_XDECREF(p); p = o; }
    PyObject* release() { PyObject* o = p; p = nullptr; return o; }
    explicit operator bool() const { return p != nullptr; }
};

// obj.name as a new reference, or nullptr with no exception set (a missing attribute declines)
static inline PyObject* get(PyObject* obj, Name n) {
    PyObject* v = PyObject_GetAttr(obj, names[n]);
    if (v == nullptr)
        PyErr_Clear();
    return v;
}

// 1 where obj.name is true, 0 where false, -1 where it cannot be read (declines)
static inline int truth(PyObject* obj, Name n) {
    Ref v(get(obj, n));
    if (!v)
        return -1;
    int t = PyObject_IsTrue(v.p);
    if (t < 0) {
        PyErr_Clear();
        return -1;
    }
    return t;
}

static inline bool is_none(PyObject* obj, Name n) {
    Ref v(get(obj, n));
    return v && v.p == Py_None;
}

// obj.name as a C integer (declines on anything but an int)
static inline bool integer(PyObject* obj, Name n, long long* out) {
    Ref v(get(obj, n));
    if (!v || !PyLong_CheckExact(v.p))
        return false;
    *out = PyLong_AsLongLong(v.p);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    return true;
}

// obj.name += delta (an int attribute); false, with the exception set, on failure
static inline bool add_to(PyObject* obj, Name n, long long delta, long long* result = nullptr) {
    long long v;
    if (!integer(obj, n, &v)) {
        PyErr_Format(PyExc_RuntimeError, "dmlgpu native hit: %s is not an int", name_text[n]);
        return false;
    }
    Ref nv(PyLong_FromLongLong(v + delta));
    if (!nv || PyObject_SetAttr(obj, names[n], nv.p) < 0)
        return false;
    if (result)
        *result = v + delta;
    return true;
}

// A Tensor operand's buffer where it is a packed Tensor at offset 0 of an unchunked buffer of ``dev``
// (new reference), else nullptr
static PyObject* operand_buffer(PyObject* t, PyObject* dev) {
    if (Py_TYPE(t) != (PyTypeObject*)tensor_type || !is_none(t, N_strides) || truth(t, N_offset) != 0)
        return nullptr;
    Ref b(get(t, N_buffer));
    if (!b)
        return nullptr;
    Ref d(get(b.p, N_device));
    if (d.p != dev || truth(b.p, N_chunked) != 0)
        return nullptr;
    return b.release();
}

// A new instance of a Python class without calling __init__ (cls.__new__(cls)); nullptr with an exception set
static PyObject* bare(PyObject* cls) {
    PyTypeObject* t = (PyTypeObject*)cls;
    return t->tp_alloc(t, 0);
}

static int set(PyObject* obj, Name n, PyObject* v) { return PyObject_SetAttr(obj, names[n], v); }

// The queued result of ``template`` (whose ``plain`` is its Prepared) on the operand buffers b0, b1, b3 (b3 may
// be nullptr) into ``out`` (a Tensor, or nullptr for a new result): Template.hit + Prepared.queue of the plain
// path. Returns a new reference: the result Tensor (``out`` itself where given), Py_None where declined, nullptr
// with an exception set where queueing failed after the commit point (a batch's submission).
static PyObject* queue_plain(PyObject* tpl, PyObject* plain, PyObject* dev, PyObject* data, PyObject* b0,
                             PyObject* b1, PyObject* b3, PyObject* out) {
    Ref ob;   // out's buffer
    if (out != nullptr) {
        ob.reset(operand_buffer(out, dev));
        if (!ob || ob.p == b1 || ob.p == b3)
            Py_RETURN_NONE;
        Ref shape(get(out, N_shape)), want(get(tpl, N_out_shape));
        Ref odt(get(out, N_dtype)), ddt(get(data, N_dtype));
        if (!shape || !want || !odt || !ddt)
            Py_RETURN_NONE;
        int same = PyObject_RichCompareBool(shape.p, want.p, Py_EQ);
        if (same != 1) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        same = PyObject_RichCompareBool(odt.p, ddt.p, Py_EQ);
        if (same != 1) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    STAGE(2)
    Ref queue(get(plain, N_submitter));
    if (!queue)
        Py_RETURN_NONE;
    Ref lock(get(queue.p, N_lock));
    if (!lock)
        Py_RETURN_NONE;
    {
        Ref got(PyObject_CallMethodOneArg(lock.p, names[N_acquire], Py_False));
        if (!got) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (got.p != Py_True)
            Py_RETURN_NONE;        // another thread holds the device's lock: the Python path waits for it
    }
    struct Unlock {
        PyObject* lock;
        ~Unlock() {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyObject* r = PyObject_CallMethodNoArgs(lock, names[N_release]);
            if (r == nullptr)
                PyErr_WriteUnraisable(lock);
            Py_XDECREF(r);
            PyErr_Restore(type, value, tb);
        }
    } unlock{lock.p};

    STAGE(3)
    Ref memory(get(queue.p, N_memory)), settings(get(queue.p, N_settings)), local(get(queue.p, N_local));
    if (!memory || !settings || !local)
        Py_RETURN_NONE;
    long long max_queued;
    if (truth(memory.p, N_closed) != 0 || !integer(settings.p, N_max_queued, &max_queued) || max_queued <= 0 ||
        !is_none(local.p, N_recording) || truth(memory.p, N_canary_words) != 0)
        Py_RETURN_NONE;
    Ref generation(get(plain, N_generation)), pipelines(get(plain, N_pipelines));
    if (!generation || !pipelines)
        Py_RETURN_NONE;
    Ref current(get(pipelines.p, N_generation));
    if (!current || PyObject_RichCompareBool(generation.p, current.p, Py_EQ) != 1) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }

    STAGE(4)
    // the result's block: the allocator's last returned block of the size class, or its free list's last
    Ref alloc, returned, freelist, block;
    long long size = 0, nbytes = 0;
    if (out == nullptr) {
        if (!integer(plain, N_out_class, &size) || size <= 0 || !integer(plain, N_out_nbytes, &nbytes))
            Py_RETURN_NONE;
        alloc.reset(get(memory.p, N_allocator));
        if (!alloc)
            Py_RETURN_NONE;
        returned.reset(get(alloc.p, N_returned));
        if (!returned)
            Py_RETURN_NONE;
        Py_ssize_t n = PyObject_Length(returned.p);
        if (n < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (n > 1)
            Py_RETURN_NONE;        // (Allocator._drain first: the Python path)
        if (n == 1) {
            Ref first(PySequence_GetItem(returned.p, 0));
            long long s;
            if (!first || !integer(first.p, N_size, &s) || s != size) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            block.reset(first.release());
        } else {
            Ref free(get(alloc.p, N_free));
            if (!free || !PyDict_CheckExact(free.p))
                Py_RETURN_NONE;
            Ref key(PyLong_FromLongLong(size));
            if (!key)
                return nullptr;
            PyObject* list = PyDict_GetItemWithError(free.p, key.p);    // borrowed
            if (list == nullptr) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) == 0)
                Py_RETURN_NONE;
            Py_INCREF(list);
            freelist.reset(list);
            PyObject* last = PyList_GET_ITEM(list, PyList_GET_SIZE(list) - 1);
            Py_INCREF(last);
            block.reset(last);
        }
    }

    STAGE(5)
    // the kept ops of these blocks
    Ref slots(get(plain, N_slots)), sets(get(plain, N_sets));
    if (!slots || !PyTuple_CheckExact(slots.p) || !sets || !PyDict_CheckExact(sets.p))
        Py_RETURN_NONE;
    Py_ssize_t ns = PyTuple_GET_SIZE(slots.p);
    Ref key(PyTuple_New(ns));
    if (!key)
        return nullptr;
    for (Py_ssize_t i = 0; i < ns; ++i) {
        long s = PyLong_AsLong(PyTuple_GET_ITEM(slots.p, i));
        PyObject* blk = nullptr;
        if (s == 0 || s == 1 || s == 3) {
            PyObject* b = s == 0 ? b0 : s == 1 ? b1 : b3;
            if (b == nullptr)
                Py_RETURN_NONE;
            blk = get(b, N_block);
        } else if (s == 2) {
            blk = out == nullptr ? (Py_INCREF(block.p), block.p) : get(ob.p, N_block);
        } else {
            PyErr_Clear();
            Py_RETURN_NONE;         // (slots of claims, scratch, parameters: not a plain template's)
        }
        if (blk == nullptr)
            Py_RETURN_NONE;
        PyTuple_SET_ITEM(key.p, i, blk);
    }
    PyObject* made = PyDict_GetItemWithError(sets.p, key.p);    // borrowed
    if (made == nullptr) {
        PyErr_Clear();
        Py_RETURN_NONE;             // (ops not made for these blocks yet: Prepared.append encodes them)
    }
    if (!PyTuple_CheckExact(made) || PyTuple_GET_SIZE(made) < 2 || !PyList_CheckExact(PyTuple_GET_ITEM(made, 0)) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(made, 1)))
        Py_RETURN_NONE;
    Ref batch(get(queue.p, N_batch));
    if (!batch)
        Py_RETURN_NONE;
    Ref ops(get(batch.p, N_ops)), number(get(batch.p, N_number));
    if (!ops || !PyList_CheckExact(ops.p) || !number)
        Py_RETURN_NONE;
    STAGE(6)
    Ref result_buffer;
    if (out == nullptr) {
        // The blocks are known: make the result's Buffer before taking the block, so that nothing fails after it
        Ref owner(get(memory.p, N_owner));
        if (!owner)
            Py_RETURN_NONE;
        Ref buf(bare(buffer_type));
        if (!buf)
            return nullptr;
        Ref nb(PyLong_FromLongLong(nbytes)), list(PyList_New(1));
        Ref btensor(get(block.p, N_tensor));
        if (!nb || !list || !btensor)
            return nullptr;
        Py_INCREF(block.p);
        PyList_SET_ITEM(list.p, 0, block.p);
        // ---- commit point (allocation) ----
        if (freelist) {
            Py_ssize_t last = PyList_GET_SIZE(freelist.p) - 1;
            if (PyList_SetSlice(freelist.p, last, last + 1, nullptr) < 0)
                return nullptr;
            if (!add_to(alloc.p, N_cached_bytes, -size) || !add_to(alloc.p, N_cache_hits, 1))
                return nullptr;
            long long allocated, peak;
            if (!add_to(alloc.p, N_allocated_bytes, size, &allocated) ||
                !integer(alloc.p, N_peak_allocated_bytes, &peak))
                return nullptr;
            if (allocated > peak) {
                Ref p(PyLong_FromLongLong(allocated));
                if (!p || set(alloc.p, N_peak_allocated_bytes, p.p) < 0)
                    return nullptr;
            }
        } else {
            Ref taken(PyObject_CallMethod(returned.p, "popleft", nullptr));
            if (!taken || !add_to(alloc.p, N_cache_hits, 1))
                return nullptr;
        }
        if (set(buf.p, N_memory, memory.p) < 0 || set(buf.p, N_device, owner.p) < 0 || set(buf.p, N_nbytes, nb.p) < 0 ||
            set(buf.p, N_block_list, list.p) < 0 || set(buf.p, N_block, block.p) < 0 ||
            set(buf.p, N_tensor_, btensor.p) < 0)
            return nullptr;
        result_buffer.reset(buf.release());
    }
    // ---- the ops appended, the blocks marked with the batch's number (Prepared.append), then Batch.added ----
    Py_ssize_t at = PyList_GET_SIZE(ops.p);
    if (PyList_SetSlice(ops.p, at, at, PyTuple_GET_ITEM(made, 0)) < 0)
        return nullptr;
    PyObject* blocks = PyTuple_GET_ITEM(made, 1);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(blocks); ++i)
        if (set(PyTuple_GET_ITEM(blocks, i), N_batch, number.p) < 0)
            return nullptr;
    long long queued;
    if (!add_to(batch.p, N_queued, 1, &queued))
        return nullptr;
    bool full = queued >= max_queued;
    if (!full) {
        int inflight = truth(batch.p, N_inflight), eager = truth(settings.p, N_eager_submit);
        full = inflight == 0 && eager == 1;
    }
    if (full) {
        Ref kw(PyDict_New());
        if (!kw || PyDict_SetItem(kw.p, names[N_wait], Py_False) < 0)
            return nullptr;
        Ref flush(get(batch.p, N_flush));
        if (!flush)
            return nullptr;
        Ref empty(PyTuple_New(0));
        Ref r(PyObject_Call(flush.p, empty.p, kw.p));
        if (!r)
            return nullptr;
    }
    ++hits;
    if (out != nullptr) {
        Py_INCREF(out);
        return out;
    }
    Ref t(bare(tensor_type));
    Ref shape(get(tpl, N_out_shape)), dtype(get(data, N_dtype));
    if (!t || !shape || !dtype || set(t.p, N_buffer, result_buffer.p) < 0 || set(t.p, N_shape, shape.p) < 0 ||
        set(t.p, N_dtype, dtype.p) < 0)
        return nullptr;
    return t.release();
}

// Template.hit(data, indices, updates, out) for a template with ``plain``; Py_None where declined
static PyObject* hit_plain(PyObject* tpl, PyObject* data, PyObject* indices, PyObject* updates, PyObject* out) {
    STAGE(1)
    Ref plain(get(tpl, N_plain));
    if (!plain || plain.p == Py_None)
        Py_RETURN_NONE;
    Ref dev(get(tpl, N_device));
    if (!dev)
        Py_RETURN_NONE;
    {
        Ref checks(get(dev.p, N_checks));
        if (!checks || truth(checks.p, N_tainted) != 0)
            Py_RETURN_NONE;
    }
    Ref b0(operand_buffer(data, dev.p));
    if (!b0)
        Py_RETURN_NONE;
    Ref b1(operand_buffer(indices, dev.p));
    if (!b1)
        Py_RETURN_NONE;
    Ref b3;
    if (updates != nullptr) {
        b3.reset(operand_buffer(updates, dev.p));
        if (!b3)
            Py_RETURN_NONE;
    }
    return queue_plain(tpl, plain.p, dev.p, data, b0.p, b1.p, b3.p, out);
}

static PyObject* hit_types(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "hit_types(Tensor, Buffer): two classes");
        return nullptr;
    }
    for (int i = 0; i < N_COUNT; ++i)
        if (names[i] == nullptr && (names[i] = PyUnicode_InternFromString(name_text[i])) == nullptr)
            return nullptr;
    Py_INCREF(args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(tensor_type, args[0]);
    Py_XSETREF(buffer_type, args[1]);
    Py_RETURN_NONE;
}

static PyObject* hit_gathered(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "hit_gathered(op, data, indices, arg, mode)");
        return nullptr;
    }
    PyObject *op = args[0], *data = args[1], *indices = args[2], *arg = args[3], *mode = args[4];
    if (tensor_type == nullptr || Py_TYPE(data) != (PyTypeObject*)tensor_type ||
        Py_TYPE(indices) != (PyTypeObject*)tensor_type || !PyLong_CheckExact(arg) || !PyUnicode_CheckExact(mode))
        Py_RETURN_NONE;
    Ref buffer(get(data, N_buffer));
    if (!buffer)
        Py_RETURN_NONE;
    Ref dev(get(buffer.p, N_device));
    if (!dev)
        Py_RETURN_NONE;
    Ref templates(get(dev.p, N_templates));
    if (!templates || !PyDict_CheckExact(templates.p))
        Py_RETURN_NONE;
    Ref key(PyTuple_New(7));
    if (!key)
        return nullptr;
    PyObject* parts[7] = {op, get(data, N_shape), get(data, N_dtype), get(indices, N_shape), get(indices, N_dtype),
                          arg, mode};
    Py_INCREF(op);
    Py_INCREF(arg);
    Py_INCREF(mode);
    bool complete = true;
    for (int i = 0; i < 7; ++i) {
        if (parts[i] == nullptr) {
            complete = false;
            parts[i] = Py_None;
            Py_INCREF(Py_None);
        }
        PyTuple_SET_ITEM(key.p, i, parts[i]);
    }
    if (!complete)
        Py_RETURN_NONE;
    STAGE(0)
    PyObject* tpl = PyDict_GetItemWithError(templates.p, key.p);     // borrowed
    if (tpl == nullptr) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_INCREF(tpl);
    Ref held(tpl);
    return hit_plain(tpl, data, indices, nullptr, nullptr);
}

static PyObject* hit_template(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "hit_template(template, data, indices, updates, out)");
        return nullptr;
    }
    if (tensor_type == nullptr)
        Py_RETURN_NONE;
    return hit_plain(args[0], args[1], args[2], args[3] == Py_None ? nullptr : args[3],
                     args[4] == Py_None ? nullptr : args[4]);
}


// Buffer.__del__ (Buffer._release) as a C method: the blocks given back to the allocator (Allocator.free: appended
// to its ``_returned``), without a Python frame. Bound to the Buffer class by hit_release(Buffer).
static PyObject* release(PyObject* self, PyObject*) {
    PyObject** dictptr = _PyObject_GetDictPtr(self);
    if (dictptr == nullptr || *dictptr == nullptr)
        Py_RETURN_NONE;
    PyObject* blocks = PyDict_GetItemWithError(*dictptr, names[N_block_list]);   // borrowed
    if (blocks == nullptr) {
        if (PyErr_Occurred())
            return nullptr;
        Py_RETURN_NONE;
    }
    Ref held(blocks);
    Py_INCREF(blocks);
    if (PyDict_DelItem(*dictptr, names[N_block_list]) < 0)
        return nullptr;
    Ref memory(PyObject_GetAttr(self, names[N_memory]));
    if (!memory)
        return nullptr;
    Ref alloc(PyObject_GetAttr(memory.p, names[N_allocator]));
    if (!alloc)
        return nullptr;
    Ref returned(PyObject_GetAttr(alloc.p, names[N_returned]));
    if (!returned)
        return nullptr;
    Ref it(PyObject_GetIter(blocks));
    if (!it)
        return nullptr;
    for (PyObject* b; (b = PyIter_Next(it.p)) != nullptr;) {
        Ref block(b);
        Ref r(PyObject_CallMethodOneArg(returned.p, names[N_append], b));
        if (!r)
            return nullptr;
    }
    if (PyErr_Occurred())
        return nullptr;
    Py_RETURN_NONE;
}
static PyMethodDef release_def = {"_release", release, METH_NOARGS,
                                  "Gives the blocks back to the allocator now (the Buffer must not be used afterwards)."};
static PyObject* hit_release(PyObject*, PyObject* cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "hit_release(Buffer): a class");
        return nullptr;
    }
    return PyDescr_NewMethod((PyTypeObject*)cls, &release_def);
}

static PyObject* hit_stop(PyObject*, PyObject* k) {
    stop_at = (int)PyLong_AsLong(k);
    if (PyErr_Occurred())
        return nullptr;
    Py_RETURN_NONE;
}

static PyObject* hit_count(PyObject*, PyObject*) { return PyLong_FromSsize_t(hits); }

static PyMethodDef methods[] = {
    {"hit_types", (PyCFunction)(void (*)(void))hit_types, METH_FASTCALL,
     "hit_types(Tensor, Buffer): dmlgpu's classes, for the native hit path (set once)"},
    {"hit_gathered", (PyCFunction)(void (*)(void))hit_gathered, METH_FASTCALL,
     "hit_gathered(op, data, indices, arg, mode): dmlgpu's call_templates.gathered() of a plain template, or None"},
    {"hit_template", (PyCFunction)(void (*)(void))hit_template, METH_FASTCALL,
     "hit_template(template, data, indices, updates, out): Template.hit() of a plain template, or None"},
    {"hit_release", (PyCFunction)hit_release, METH_O, "hit_release(Buffer): Buffer._release as a C method"},
    {"hit_stop", (PyCFunction)hit_stop, METH_O, "hit_stop(k): decline at stage k (99: never)"},
    {"hit_count", (PyCFunction)hit_count, METH_NOARGS, "hits queued by the native hit path so far"},
    {nullptr, nullptr, 0, nullptr}};

// Adds the functions to module ``m``; false with an exception set on failure
static bool add_to_module(PyObject* m) {
    for (PyMethodDef* d = methods; d->ml_name != nullptr; ++d) {
        PyObject* f = PyCFunction_NewEx(d, nullptr, nullptr);
        if (f == nullptr || PyModule_AddObject(m, d->ml_name, f) < 0) {
            Py_XDECREF(f);
            return false;
        }
    }
    return true;
}

}  // namespace dmlgpu_hit
