// SPDX-License-Identifier: MIT
/* tailcause._speedups: the two hot paths of the Python SDK in C, optional (the package works
 * without it, at a higher cost per call; sdk/python/tailcause/_native.py finds it).
 *
 * 1. Probe calls. A ctypes call converts its arguments through libffi and costs about 0.35 us
 *    hot and several times that cold; `Probes(addresses)` calls the same functions of the same
 *    loaded libtailcause_sdk.so (ctypes hands over their addresses) as plain C calls.
 *    Arguments are checked in Python (tailcause/_validate.py) before they reach here; the
 *    conversions below still refuse anything else with an exception.
 *
 * 2. The module hook of `tailcause instrument`. Wrapping torch.nn.Module.__call__ in Python
 *    puts a Python frame under every submodule call (about 90 in a small agent's request), and
 *    only the outermost call of a thread is a stage. `ModuleCall(original, outer)` is that
 *    wrapper as a C callable: it runs `outer` (the Python hook) for a thread's outermost module
 *    call and, inside it, calls `original` directly, so a submodule costs one C branch. Given
 *    the hook's thread state, it also skips the hook for an outermost call that only continues
 *    the thread's lingering stage (a decoding loop's calls after its first), the hook's common
 *    case, which then runs no Python at all.
 *
 * 3. Request ids. `RequestIds(salt)` is the Python SDK's id generator (splitmix64's finaliser over
 *    salt + counter, tailcause/__init__.py) as one C call: in Python it takes a lock and three
 *    big-int multiplications, on every request.
 *
 * Written by hand on the CPython C API: cffi (python3-cffi) could make the probe calls, but not
 * the module hook, which must be a callable that binds like a method and is called without a
 * Python frame; one small module does both. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <string.h>

#include "tailcause/sdk_lib.h"

/* ---- probe calls --------------------------------------------------------------------------- */

/* Integer arguments, each checked as it is converted (no conversion runs with an error set). */
#define U64_ARG(var, o)                                                                            \
	do {                                                                                       \
		(var) = PyLong_AsUnsignedLongLong(o);                                              \
		if ((var) == (uint64_t)-1 && PyErr_Occurred())                                     \
			return NULL;                                                               \
	} while (0)
#define I64_ARG(var, o)                                                                            \
	do {                                                                                       \
		(var) = PyLong_AsLongLong(o);                                                      \
		if ((var) == -1 && PyErr_Occurred())                                               \
			return NULL;                                                               \
	} while (0)

/* bytes without NUL, or None for a NULL pointer where `nullable` (the trace id). */
static int str_arg(PyObject *o, int nullable, const char **out)
{
	if (nullable && o == Py_None) {
		*out = NULL;
		return 0;
	}
	if (!PyBytes_Check(o)) {
		PyErr_Format(PyExc_TypeError, "tailcause: expected bytes, not %.100s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	*out = PyBytes_AS_STRING(o);
	if (strlen(*out) != (size_t)PyBytes_GET_SIZE(o)) {
		PyErr_SetString(PyExc_ValueError,
				"tailcause: a probe's string contains a NUL byte");
		return -1;
	}
	return 0;
}

/* Every probe of sdk_lib.h, in one list for the struct, the methods and the addresses. */
#define TAILCAUSE_PROBES(X)                                                                        \
	X(request_begin)                                                                           \
	X(request_end)                                                                             \
	X(stage_begin)                                                                             \
	X(stage_end)                                                                               \
	X(context_attach)                                                                          \
	X(context_detach)                                                                          \
	X(cache_lookup)                                                                            \
	X(token)                                                                                   \
	X(layer_begin)                                                                             \
	X(layer_end)                                                                               \
	X(output_quality)

typedef struct {
	PyObject_HEAD
#define PROBE_FIELD(name) __typeof__(&tailcause_sdk_##name) name;
	TAILCAUSE_PROBES(PROBE_FIELD)
} Probes;

static int check_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t want)
{
	if (nargs == want)
		return 0;
	PyErr_Format(PyExc_TypeError, "tailcause: %s takes %zd arguments, got %zd", name, want,
		     nargs);
	return -1;
}

static PyObject *probes_request_begin(Probes *self, PyObject *const *a, Py_ssize_t n)
{
	const char *tenant, *agent, *trace_id;
	uint64_t rid;

	if (check_nargs("request_begin", n, 4) || str_arg(a[1], 0, &tenant) ||
	    str_arg(a[2], 0, &agent) || str_arg(a[3], 1, &trace_id))
		return NULL;
	U64_ARG(rid, a[0]);
	self->request_begin(rid, tenant, agent, trace_id);
	Py_RETURN_NONE;
}

/* (u64, i64) and (u64, u64) probes: the second argument's type and conversion. */
#define PROBE_U64_AND(name, y_type, Y_ARG)                                                         \
	static PyObject *probes_##name(Probes *self, PyObject *const *a, Py_ssize_t n)             \
	{                                                                                          \
		uint64_t x;                                                                        \
		y_type y;                                                                          \
		if (check_nargs(#name, n, 2))                                                      \
			return NULL;                                                               \
		U64_ARG(x, a[0]);                                                                  \
		Y_ARG(y, a[1]);                                                                    \
		self->name(x, y);                                                                  \
		Py_RETURN_NONE;                                                                    \
	}

/* (u64) probes. */
#define PROBE_U64(name)                                                                            \
	static PyObject *probes_##name(Probes *self, PyObject *const *a, Py_ssize_t n)             \
	{                                                                                          \
		uint64_t x;                                                                        \
		if (check_nargs(#name, n, 1))                                                      \
			return NULL;                                                               \
		U64_ARG(x, a[0]);                                                                  \
		self->name(x);                                                                     \
		Py_RETURN_NONE;                                                                    \
	}

PROBE_U64_AND(request_end, int64_t, I64_ARG)
PROBE_U64_AND(stage_end, int64_t, I64_ARG)
PROBE_U64(context_attach)
PROBE_U64(context_detach)
PROBE_U64_AND(token, uint64_t, U64_ARG)
PROBE_U64_AND(layer_begin, uint64_t, U64_ARG)
PROBE_U64_AND(layer_end, uint64_t, U64_ARG)
PROBE_U64_AND(output_quality, uint64_t, U64_ARG)

static PyObject *probes_stage_begin(Probes *self, PyObject *const *a, Py_ssize_t n)
{
	const char *name;
	uint64_t rid;
	int64_t kind;

	if (check_nargs("stage_begin", n, 3) || str_arg(a[2], 0, &name))
		return NULL;
	U64_ARG(rid, a[0]);
	I64_ARG(kind, a[1]);
	self->stage_begin(rid, kind, name);
	Py_RETURN_NONE;
}

static PyObject *probes_cache_lookup(Probes *self, PyObject *const *a, Py_ssize_t n)
{
	const char *cache;
	uint64_t rid, age, key;
	int64_t result;

	if (check_nargs("cache_lookup", n, 5) || str_arg(a[1], 0, &cache))
		return NULL;
	U64_ARG(rid, a[0]);
	I64_ARG(result, a[2]);
	U64_ARG(age, a[3]);
	U64_ARG(key, a[4]);
	self->cache_lookup(rid, cache, result, age, key);
	Py_RETURN_NONE;
}

#define PROBE_METHOD(name) {#name, (PyCFunction)(void (*)(void))probes_##name, METH_FASTCALL, NULL},
static PyMethodDef probes_methods[] = {TAILCAUSE_PROBES(PROBE_METHOD){NULL, NULL, 0, NULL}};

#define PROBE_SLOT(name) {#name, offsetof(Probes, name)},
static const struct {
	const char *name;
	size_t offset;
} probe_slots[] = {TAILCAUSE_PROBES(PROBE_SLOT)};

/* Probes(addresses): `addresses` maps each probe's name (as in the methods above) to the address
 * of its tailcause_sdk_<name> function, as ctypes reports it for the loaded library. Filled in
 * tp_new, so that no Probes object exists with a null function pointer. */
static PyObject *probes_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	PyObject *addresses;
	Probes *self;

	if (kwargs && PyDict_Size(kwargs)) {
		PyErr_SetString(PyExc_TypeError, "tailcause: Probes takes no keyword arguments");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "O!:Probes", &PyDict_Type, &addresses))
		return NULL;
	self = (Probes *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	for (size_t i = 0; i < sizeof(probe_slots) / sizeof(probe_slots[0]); i++) {
		const char *name = probe_slots[i].name;
		PyObject *address = PyDict_GetItemString(addresses, name);
		void *p;

		if (!address) {
			PyErr_Format(PyExc_KeyError, "tailcause: no address for probe %s", name);
			goto fail;
		}
		p = PyLong_AsVoidPtr(address);
		if (!p) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError,
					     "tailcause: null address for probe %s", name);
			goto fail;
		}
		*(void **)((char *)self + probe_slots[i].offset) = p;
	}
	return (PyObject *)self;
fail:
	Py_DECREF(self);
	return NULL;
}

static PyTypeObject ProbesType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tailcause._speedups.Probes",
	.tp_basicsize = sizeof(Probes),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "libtailcause_sdk.so's probe functions, called directly (see the module's doc).",
	.tp_methods = probes_methods,
	.tp_new = probes_new,
};

/* ---- the module hook ----------------------------------------------------------------------- */

/* Set while this thread runs `outer` of some ModuleCall: every module call inside is a
 * submodule call. A C thread-local, so the test costs no Python attribute lookup. */
static _Thread_local int in_outer_call;

typedef struct {
	PyObject_HEAD PyObject *original; /* the unwrapped Module.__call__ */
	PyObject *outer; /* the hook, called as the original is, for a thread's outermost call */
	/* Optional, for the lingering stage's fast path below: the hook's per-thread state (a
	 * threading.local with `depth` and `linger`) and what to call when a call fails in it. */
	PyObject *state, *on_error;
	vectorcallfunc vectorcall;
} ModuleCall;

static PyObject *str_depth, *str_linger; /* interned attribute names */
static PyObject *int_zero, *int_one;

/* Whether the thread's lingering stage (state.linger, a tuple the hook sets, item 1 the code) was
 * opened by the code calling now, outside any stage (state.depth 0): then this call belongs to
 * that stage and the hook has nothing to do. -1 with an exception set on error. */
static int continues_lingering_stage(ModuleCall *self)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* the caller's: this call has no Python frame */
	PyCodeObject *code;
	PyObject *linger, *depth;
	int same;

	if (!frame)
		return 0;
	linger = PyObject_GetAttr(self->state, str_linger);
	if (!linger)
		return -1;
	code = PyFrame_GetCode(frame);
	same = PyTuple_CheckExact(linger) && PyTuple_GET_SIZE(linger) >= 2 &&
	       PyTuple_GET_ITEM(linger, 1) == (PyObject *)code;
	Py_DECREF(code);
	Py_DECREF(linger);
	if (!same)
		return 0;
	depth = PyObject_GetAttr(self->state, str_depth);
	if (!depth)
		return -1;
	same = PyObject_Not(depth);
	Py_DECREF(depth);
	return same;
}

/* The Python hook's work for a call that continues the lingering stage, without its frame:
 * state.depth is 1 during the call (wrapped library calls inside are part of the stage), and a
 * failed call ends the stage (on_error). */
static PyObject *call_in_lingering_stage(ModuleCall *self, PyObject *const *args, size_t nargsf,
					 PyObject *kwnames)
{
	PyObject *result, *type, *value, *tb, *r;

	if (PyObject_SetAttr(self->state, str_depth, int_one) < 0)
		return NULL;
	in_outer_call = 1;
	result = PyObject_Vectorcall(self->original, args, nargsf, kwnames);
	in_outer_call = 0;
	PyErr_Fetch(&type, &value, &tb); /* the call's exception, kept across the clean-up */
	if (!result) {
		r = PyObject_CallNoArgs(self->on_error);
		if (!r)
			PyErr_WriteUnraisable(self->on_error);
		Py_XDECREF(r);
	}
	if (PyObject_SetAttr(self->state, str_depth, int_zero) < 0)
		PyErr_WriteUnraisable(self->state);
	PyErr_Restore(type, value, tb);
	return result;
}

static PyObject *module_call_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
					PyObject *kwnames)
{
	ModuleCall *self = (ModuleCall *)op;
	PyObject *result;

	if (in_outer_call)
		return PyObject_Vectorcall(self->original, args, nargsf, kwnames);
	if (self->state) {
		int lingering = continues_lingering_stage(self);

		if (lingering < 0)
			return NULL;
		if (lingering)
			return call_in_lingering_stage(self, args, nargsf, kwnames);
	}
	in_outer_call = 1;
	result = PyObject_Vectorcall(self->outer, args, nargsf, kwnames);
	in_outer_call = 0;
	return result;
}

static PyObject *module_call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	PyObject *original, *outer, *state = NULL, *on_error = NULL;
	ModuleCall *self;

	if (kwargs && PyDict_Size(kwargs)) {
		PyErr_SetString(PyExc_TypeError,
				"tailcause: ModuleCall takes no keyword arguments");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "OO|OO:ModuleCall", &original, &outer, &state, &on_error))
		return NULL;
	if (!PyCallable_Check(original) || !PyCallable_Check(outer)) {
		PyErr_SetString(PyExc_TypeError,
				"tailcause: ModuleCall(original, outer) takes callables");
		return NULL;
	}
	if (state && (!on_error || !PyCallable_Check(on_error))) {
		PyErr_SetString(PyExc_TypeError,
				"tailcause: ModuleCall(original, outer, state, on_error): on_error "
				"must be callable");
		return NULL;
	}
	self = (ModuleCall *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->original = Py_NewRef(original);
	self->outer = Py_NewRef(outer);
	self->state = Py_XNewRef(state);
	self->on_error = Py_XNewRef(on_error);
	self->vectorcall = module_call_vectorcall;
	return (PyObject *)self;
}

static int module_call_traverse(ModuleCall *self, visitproc visit, void *arg)
{
	Py_VISIT(self->original);
	Py_VISIT(self->outer);
	Py_VISIT(self->state);
	Py_VISIT(self->on_error);
	return 0;
}

static int module_call_clear(ModuleCall *self)
{
	Py_CLEAR(self->original);
	Py_CLEAR(self->outer);
	Py_CLEAR(self->state);
	Py_CLEAR(self->on_error);
	return 0;
}

static void module_call_dealloc(ModuleCall *self)
{
	PyObject_GC_UnTrack(self);
	module_call_clear(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* As a class attribute it binds like a function: instance.__call__ is a bound method. */
static PyObject *module_call_get(PyObject *self, PyObject *obj, PyObject *type)
{
	if (obj == NULL || obj == Py_None)
		return Py_NewRef(self);
	return PyMethod_New(self, obj);
}

static PyMemberDef module_call_members[] = {
	/* What inspect.signature() and functools follow to the wrapped function. */
	{"__wrapped__", T_OBJECT, offsetof(ModuleCall, original), READONLY, NULL},
	{"outer", T_OBJECT, offsetof(ModuleCall, outer), READONLY, NULL},
	{NULL, 0, 0, 0, NULL},
};

static PyObject *module_call_wrapped_flag(PyObject *self, void *closure)
{
	Py_RETURN_TRUE;
}

/* __name__, __qualname__, __module__, __doc__: the original's (reprs, help, introspection). */
static PyObject *module_call_forward(PyObject *self, void *name)
{
	return PyObject_GetAttrString(((ModuleCall *)self)->original, name);
}

static PyGetSetDef module_call_getset[] = {
	{"__tailcause_wrapped__", module_call_wrapped_flag, NULL, NULL, NULL},
	{"__name__", module_call_forward, NULL, NULL, "__name__"},
	{"__qualname__", module_call_forward, NULL, NULL, "__qualname__"},
	{"__module__", module_call_forward, NULL, NULL, "__module__"},
	{"__doc__", module_call_forward, NULL, NULL, "__doc__"},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ModuleCallType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tailcause._speedups.ModuleCall",
	.tp_basicsize = sizeof(ModuleCall),
	/* METHOD_DESCRIPTOR: a call through the class (slot_tp_call) passes the instance as the
	 * first argument instead of creating a bound method first, as for a Python function. */
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
		    Py_TPFLAGS_METHOD_DESCRIPTOR,
	.tp_doc = "ModuleCall(original, outer[, state, on_error]): calls outer for a thread's "
		  "outermost call, original inside it, and original for an outermost call that "
		  "continues state's lingering stage.",
	.tp_vectorcall_offset = offsetof(ModuleCall, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_descr_get = module_call_get,
	.tp_new = module_call_new,
	.tp_traverse = (traverseproc)module_call_traverse,
	.tp_clear = (inquiry)module_call_clear,
	.tp_dealloc = (destructor)module_call_dealloc,
	.tp_members = module_call_members,
	.tp_getset = module_call_getset,
};

/* ---- request ids --------------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD uint64_t salt;
	uint64_t count; /* ids handed out so far; the GIL serialises the callers */
	vectorcallfunc vectorcall;
} RequestIds;

/* splitmix64's finaliser, as _mix64 in tailcause/__init__.py: a bijection on 64 bits. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

static PyObject *request_ids_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
					PyObject *kwnames)
{
	RequestIds *self = (RequestIds *)op;
	uint64_t id;

	if (check_nargs("RequestIds()", PyVectorcall_NARGS(nargsf), 0) < 0)
		return NULL;
	if (kwnames && PyTuple_GET_SIZE(kwnames)) {
		PyErr_SetString(PyExc_TypeError, "tailcause: RequestIds() takes no arguments");
		return NULL;
	}
	do /* 0 means "no request" to the probes: skipped, as in Python */
		id = mix64(self->salt + self->count++);
	while (!id);
	return PyLong_FromUnsignedLongLong(id);
}

static PyObject *request_ids_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	unsigned long long salt;
	RequestIds *self;

	if (kwargs && PyDict_Size(kwargs)) {
		PyErr_SetString(PyExc_TypeError,
				"tailcause: RequestIds takes no keyword arguments");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "K:RequestIds", &salt))
		return NULL;
	self = (RequestIds *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->salt = salt;
	self->vectorcall = request_ids_vectorcall;
	return (PyObject *)self;
}

static PyTypeObject RequestIdsType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tailcause._speedups.RequestIds",
	.tp_basicsize = sizeof(RequestIds),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_doc = "RequestIds(salt)(): the next non-zero request id, splitmix64(salt + n).",
	.tp_vectorcall_offset = offsetof(RequestIds, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_new = request_ids_new,
};

/* ---- the module ---------------------------------------------------------------------------- */

static struct PyModuleDef speedups_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "tailcause._speedups",
	.m_doc = "The Python SDK's hot paths in C (optional; see the source's first comment).",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
	PyObject *m;

	str_depth = PyUnicode_InternFromString("depth");
	str_linger = PyUnicode_InternFromString("linger");
	int_zero = PyLong_FromLong(0);
	int_one = PyLong_FromLong(1);
	if (!str_depth || !str_linger || !int_zero || !int_one)
		return NULL;
	if (PyType_Ready(&ProbesType) < 0 || PyType_Ready(&ModuleCallType) < 0 ||
	    PyType_Ready(&RequestIdsType) < 0)
		return NULL;
	m = PyModule_Create(&speedups_module);
	if (!m)
		return NULL;
	if (PyModule_AddObjectRef(m, "Probes", (PyObject *)&ProbesType) < 0 ||
	    PyModule_AddObjectRef(m, "ModuleCall", (PyObject *)&ModuleCallType) < 0 ||
	    PyModule_AddObjectRef(m, "RequestIds", (PyObject *)&RequestIdsType) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
