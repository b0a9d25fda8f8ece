/* SPDX-License-Identifier: MIT */
/*
 * Elementwise kernels: UNARY, BINARY, WHERE and FILL (hpu_kernels.h).
 *
 * Every operand has the output's shape, so a work item is one output
 * element and any split of them is independent.  One loop serves all four
 * kernels: it reads a block of elements of every input, applies the
 * kernel's op to the whole block, and writes the block.  The launch picks
 * the domain once: int64 when every operand is integral (so wide integers
 * stay exact and wrap), double otherwise.
 */
#include "hdm_kernel.h"

/* Elements a block loop handles at a time: small enough for the stack. */
#define HDM_KBLOCK 256
/* The most inputs an elementwise kernel reads (WHERE: cond, a, b). */
#define HDM_KELT_MAX_IN 3

/*
 * m elements step bytes apart from p into x (load) or out of it.  Inlined
 * with F32 and 4 for a contiguous fp32 span: a loop with no dtype to test
 * and no stride to multiply, the common case.
 */
static inline void hdm_kspan_f(uint32_t dtype, uint8_t *p, int64_t step, size_t m, double *x,
			       bool load)
{
	for (size_t j = 0; j < m; j++) {
		if (load)
			x[j] = hdm_kload_f(dtype, p + (int64_t)j * step);
		else
			hdm_kstore_f(dtype, p + (int64_t)j * step, x[j]);
	}
}

/* The next n elements of k's walk into x (load) or out of it; inlined, so load is a constant. */
static inline __attribute__((always_inline)) void hdm_kmove_f(struct hdm_kcur *k, size_t n,
							      double *x, bool load)
{
	int64_t step = k->step[0];
	bool dense = k->dtype == HPU_DTYPE_F32 && step == 4;

	for (size_t m; n; n -= m, x += m) {
		uint8_t *p;

		m = hdm_kcur_span(k, n, &p);
		if (dense)
			hdm_kspan_f(HPU_DTYPE_F32, p, 4, m, x, load);
		else
			hdm_kspan_f(k->dtype, p, step, m, x, load);
	}
}

/* m elements of size bytes, step bytes apart from p, into x (load) or out of it. */
static inline __attribute__((always_inline)) void hdm_kspan_bytes(uint8_t *p, int64_t step,
								   size_t m, uint8_t *x,
								   size_t size, bool load)
{
	for (size_t j = 0; j < m; j++) {
		if (load)
			memcpy(x + j * size, p + (int64_t)j * step, size);
		else
			memcpy(p + (int64_t)j * step, x + j * size, size);
	}
}

/*
 * The next n elements of k's walk as bytes, size each, into x (load) or out
 * of it: a COPY to its own dtype moves bits, where a trip through double
 * would turn a signaling NaN into a quiet one.  Each size is its own loop,
 * so that an element is one load and one store.
 */
static void hdm_kmove_bytes(struct hdm_kcur *k, size_t n, uint8_t *x, size_t size, bool load)
{
	for (size_t m; n; n -= m, x += m * size) {
		int64_t step = k->step[0];
		uint8_t *p;

		m = hdm_kcur_span(k, n, &p);
		switch (size) {
		case 1: hdm_kspan_bytes(p, step, m, x, 1, load); break;
		case 2: hdm_kspan_bytes(p, step, m, x, 2, load); break;
		case 4: hdm_kspan_bytes(p, step, m, x, 4, load); break;
		default: hdm_kspan_bytes(p, step, m, x, 8, load); break;
		}
	}
}

/* The same in int64, element by element (integral operands are never fp32). */
static void hdm_kmove_i(struct hdm_kcur *k, size_t n, int64_t *x, bool load)
{
	for (size_t j = 0; j < n; j++, hdm_kcur_next(k)) {
		if (load)
			x[j] = hdm_kload_i(k->dtype, hdm_kcur_ptr(k));
		else
			hdm_kstore_i(k->dtype, hdm_kcur_ptr(k), x[j]);
	}
}

/*
 * A kernel's op over one block: o[k] from the inputs x[j][k], k < n.  The
 * switch on the op sits outside the element loop, so each loop is
 * branch-free where its expression is and the compiler can vectorise it.
 */
#define HDM_KMAP(expr)                                                   \
	do {                                                             \
		for (size_t k = 0; k < n; k++)                           \
			o[k] = (expr);                                   \
	} while (0)

/* Wrapping int64 arithmetic, without the undefined behaviour of signed overflow. */
static inline int64_t hdm_iadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t hdm_imul(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

static inline int64_t hdm_ineg(int64_t a)
{
	return (int64_t)(0 - (uint64_t)a);
}

/* ---- UNARY ---- */

/* max(v, 0) letting NaN through, as torch.relu. */
static inline double hdm_relu(double v)
{
	return hdm_kkeep(!(v < 0), v);
}

static void hdm_unary_f(const struct hdm_kcall *c, size_t n, double *o, double (*x)[HDM_KBLOCK])
{
	const double *a = x[0], s = c->scalars[0], k0 = sqrt(M_2_PI);

	switch (c->args[0]) {
	case HPU_UNARY_COPY: HDM_KMAP(a[k]); break;
	case HPU_UNARY_NEG: HDM_KMAP(-a[k]); break;
	case HPU_UNARY_ABS: HDM_KMAP(fabs(a[k])); break;
	case HPU_UNARY_RELU: HDM_KMAP(hdm_relu(a[k])); break;
	case HPU_UNARY_GELU: HDM_KMAP(0.5 * a[k] * (1 + erf(a[k] * M_SQRT1_2))); break;
	case HPU_UNARY_GELU_TANH:
		HDM_KMAP(0.5 * a[k] * (1 + tanh(k0 * (a[k] + 0.044715 * a[k] * a[k] * a[k]))));
		break;
	case HPU_UNARY_TANH: HDM_KMAP(tanh(a[k])); break;
	case HPU_UNARY_SIGMOID: HDM_KMAP(1 / (1 + exp(-a[k]))); break;
	case HPU_UNARY_EXP: HDM_KMAP(exp(a[k])); break;
	case HPU_UNARY_LOG: HDM_KMAP(log(a[k])); break;
	case HPU_UNARY_SQRT: HDM_KMAP(sqrt(a[k])); break;
	case HPU_UNARY_RSQRT: HDM_KMAP(1 / sqrt(a[k])); break;
	case HPU_UNARY_RECIPROCAL: HDM_KMAP(1 / a[k]); break;
	case HPU_UNARY_SILU: HDM_KMAP(a[k] / (1 + exp(-a[k]))); break;
	case HPU_UNARY_SIN: HDM_KMAP(sin(a[k])); break;
	case HPU_UNARY_COS: HDM_KMAP(cos(a[k])); break;
	case HPU_UNARY_ERF: HDM_KMAP(erf(a[k])); break;
	default: HDM_KMAP(pow(a[k], s)); break; /* POW_SCALAR; check() allows no other */
	}
}

/* Only COPY, NEG, ABS and RELU can have an integral out (check()). */
static void hdm_unary_i(const struct hdm_kcall *c, size_t n, int64_t *o, int64_t (*x)[HDM_KBLOCK])
{
	const int64_t *a = x[0];

	switch (c->args[0]) {
	case HPU_UNARY_NEG: HDM_KMAP(hdm_ineg(a[k])); break;
	case HPU_UNARY_ABS: HDM_KMAP(a[k] < 0 ? hdm_ineg(a[k]) : a[k]); break;
	case HPU_UNARY_RELU: HDM_KMAP(a[k] < 0 ? 0 : a[k]); break;
	default: HDM_KMAP(a[k]); break;
	}
}

/* ---- BINARY ---- */

static void hdm_binary_f(const struct hdm_kcall *c, size_t n, double *o, double (*x)[HDM_KBLOCK])
{
	const double *a = x[0], *b = x[1], alpha = c->scalars[0];
	bool trunc_out = !hdm_dtype_is_float(c->t[0].dtype);

	if (c->args[1]) /* s1 stands for b */
		for (size_t k = 0; k < n; k++)
			x[1][k] = c->scalars[1];
	switch (c->args[0]) {
	case HPU_BINARY_ADD: HDM_KMAP(a[k] + alpha * b[k]); break;
	case HPU_BINARY_SUB: HDM_KMAP(a[k] - alpha * b[k]); break;
	case HPU_BINARY_MUL: HDM_KMAP(a[k] * b[k]); break;
	/* An integral out takes the quotient toward zero, U8 included (0.5 is false). */
	case HPU_BINARY_DIV: HDM_KMAP(trunc_out ? trunc(a[k] / b[k]) : a[k] / b[k]); break;
	/* NaN wins, as torch.maximum and torch.minimum. */
	case HPU_BINARY_MAX: HDM_KMAP(a[k] > b[k] || isnan(a[k]) ? a[k] : b[k]); break;
	case HPU_BINARY_MIN: HDM_KMAP(a[k] < b[k] || isnan(a[k]) ? a[k] : b[k]); break;
	case HPU_BINARY_POW: HDM_KMAP(pow(a[k], b[k])); break;
	case HPU_BINARY_EQ: HDM_KMAP(a[k] == b[k]); break;
	case HPU_BINARY_NE: HDM_KMAP(a[k] != b[k]); break;
	case HPU_BINARY_LT: HDM_KMAP(a[k] < b[k]); break;
	case HPU_BINARY_LE: HDM_KMAP(a[k] <= b[k]); break;
	case HPU_BINARY_GT: HDM_KMAP(a[k] > b[k]); break;
	default: HDM_KMAP(a[k] >= b[k]); break; /* GE */
	}
}

/* a ** b; a negative b gives the truncated 1 / a ** -b (1 / 0 counting as 0). */
static int64_t hdm_ipow(int64_t a, int64_t b)
{
	int64_t r = 1;

	if (b < 0)
		return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
	for (; b; b >>= 1, a = hdm_imul(a, a))
		if (b & 1)
			r = hdm_imul(r, a);
	return r;
}

/* Truncating; x / 0 is 0 and INT64_MIN / -1 wraps, rather than trapping the device. */
static int64_t hdm_idiv(int64_t a, int64_t b)
{
	return b == 0 ? 0 : b == -1 ? hdm_ineg(a) : a / b;
}

static void hdm_binary_i(const struct hdm_kcall *c, size_t n, int64_t *o, int64_t (*x)[HDM_KBLOCK])
{
	const int64_t *a = x[0], *b = x[1], alpha = (int64_t)c->scalars[0];

	if (c->args[1])
		for (size_t k = 0; k < n; k++)
			x[1][k] = (int64_t)c->scalars[1];
	switch (c->args[0]) {
	case HPU_BINARY_ADD: HDM_KMAP(hdm_iadd(a[k], hdm_imul(alpha, b[k]))); break;
	case HPU_BINARY_SUB: HDM_KMAP(hdm_iadd(a[k], hdm_ineg(hdm_imul(alpha, b[k])))); break;
	case HPU_BINARY_MUL: HDM_KMAP(hdm_imul(a[k], b[k])); break;
	case HPU_BINARY_DIV: HDM_KMAP(hdm_idiv(a[k], b[k])); break;
	case HPU_BINARY_MAX: HDM_KMAP(a[k] > b[k] ? a[k] : b[k]); break;
	case HPU_BINARY_MIN: HDM_KMAP(a[k] < b[k] ? a[k] : b[k]); break;
	case HPU_BINARY_POW: HDM_KMAP(hdm_ipow(a[k], b[k])); break;
	case HPU_BINARY_EQ: HDM_KMAP(a[k] == b[k]); break;
	case HPU_BINARY_NE: HDM_KMAP(a[k] != b[k]); break;
	case HPU_BINARY_LT: HDM_KMAP(a[k] < b[k]); break;
	case HPU_BINARY_LE: HDM_KMAP(a[k] <= b[k]); break;
	case HPU_BINARY_GT: HDM_KMAP(a[k] > b[k]); break;
	default: HDM_KMAP(a[k] >= b[k]); break; /* GE */
	}
}

/* ---- WHERE and FILL ---- */

static void hdm_where_f(const struct hdm_kcall *c, size_t n, double *o, double (*x)[HDM_KBLOCK])
{
	(void)c;
	HDM_KMAP(x[0][k] != 0 ? x[1][k] : x[2][k]);
}

static void hdm_where_i(const struct hdm_kcall *c, size_t n, int64_t *o, int64_t (*x)[HDM_KBLOCK])
{
	(void)c;
	HDM_KMAP(x[0][k] != 0 ? x[1][k] : x[2][k]);
}

static void hdm_fill_f(const struct hdm_kcall *c, size_t n, double *o, double (*x)[HDM_KBLOCK])
{
	(void)x;
	HDM_KMAP(c->scalars[0]);
}

/* ---- the shared loop ---- */

static bool hdm_kall_integral(const struct hdm_kcall *c)
{
	for (uint32_t i = 0; i < c->num_tensors; i++)
		if (hdm_dtype_is_float(c->t[i].dtype))
			return false;
	return true;
}

/* A whole number int64 holds exactly (doubles from -2^63 up to but not including 2^63). */
static bool hdm_kwhole(double v)
{
	return v == trunc(v) && v >= -0x1p63 && v < 0x1p63;
}

/* A scalar b or an alpha counts as integral when it is a whole number. */
static bool hdm_binary_integral(const struct hdm_kcall *c)
{
	bool alpha = c->args[0] != HPU_BINARY_ADD && c->args[0] != HPU_BINARY_SUB;

	return hdm_kall_integral(c) && (alpha || hdm_kwhole(c->scalars[0])) &&
	       (!c->args[1] || hdm_kwhole(c->scalars[1]));
}

struct hdm_keltwise {
	void (*f)(const struct hdm_kcall *c, size_t n, double *o, double (*x)[HDM_KBLOCK]);
	void (*i)(const struct hdm_kcall *c, size_t n, int64_t *o, int64_t (*x)[HDM_KBLOCK]);
	/* Whether the launch computes in int64; NULL: always double. */
	bool (*integral)(const struct hdm_kcall *c);
};

static const struct hdm_keltwise hdm_keltwise_ops[] = {
	[HPU_KERNEL_UNARY] = { hdm_unary_f, hdm_unary_i, hdm_kall_integral },
	[HPU_KERNEL_BINARY] = { hdm_binary_f, hdm_binary_i, hdm_binary_integral },
	[HPU_KERNEL_WHERE] = { hdm_where_f, hdm_where_i, hdm_kall_integral },
	[HPU_KERNEL_FILL] = { hdm_fill_f, NULL, NULL },
};

static void hdm_keltwise_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	/* The engine runs a def only for its own id, so the id picks the ops. */
	const struct hdm_keltwise *ops = &hdm_keltwise_ops[c->kernel];
	bool integral = ops->integral && ops->integral(c);
	bool bits = c->kernel == HPU_KERNEL_UNARY && c->args[0] == HPU_UNARY_COPY &&
		    c->t[0].dtype == c->t[1].dtype;
	size_t size = hdm_dtype_size(c->t[0].dtype);
	uint32_t nin = c->num_tensors - 1, j;
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_kcur k[1 + HDM_KELT_MAX_IN]; /* out, then the inputs */
	/* One block of each input and of out; a scalar b takes the second input's row. */
	union {
		struct { double x[HDM_KELT_MAX_IN][HDM_KBLOCK], o[HDM_KBLOCK]; } f;
		struct { int64_t x[HDM_KELT_MAX_IN][HDM_KBLOCK], o[HDM_KBLOCK]; } i;
	} b;

	for (j = 0; j <= nin; j++)
		hdm_kcur_init(&k[j], &c->t[j], begin);
	while (begin < end) {
		size_t n = end - begin < HDM_KBLOCK ? end - begin : HDM_KBLOCK;

		if (hdm_kpace(&p, n))
			return;
		/* The whole block is read before out is written: in place works. */
		if (bits) {
			hdm_kmove_bytes(&k[1], n, (uint8_t *)b.i.o, size, true);
			hdm_kmove_bytes(&k[0], n, (uint8_t *)b.i.o, size, false);
		} else if (integral) {
			for (j = 0; j < nin; j++)
				hdm_kmove_i(&k[j + 1], n, b.i.x[j], true);
			ops->i(c, n, b.i.o, b.i.x);
			hdm_kmove_i(&k[0], n, b.i.o, false);
		} else {
			for (j = 0; j < nin; j++)
				hdm_kmove_f(&k[j + 1], n, b.f.x[j], true);
			ops->f(c, n, b.f.o, b.f.x);
			hdm_kmove_f(&k[0], n, b.f.o, false);
		}
		begin += n;
	}
}

/* ---- checks ---- */

/* Every operand has out's shape, args from first_unused_arg on are 0; an item is an out element. */
static int hdm_keltwise_check(const struct hdm_kcall *c, uint32_t first_unused_arg, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0];

	for (uint32_t a = first_unused_arg; a < HPU_KERNEL_MAX_ARGS; a++)
		if (c->args[a])
			return -1;
	for (uint32_t i = 1; i < c->num_tensors; i++) {
		if (c->t[i].ndim != out->ndim)
			return -1;
		for (uint32_t d = 0; d < out->ndim; d++)
			if (c->t[i].shape[d] != out->shape[d])
				return -1;
	}
	*items = hdm_kview_numel(out);
	return 0;
}

static int hdm_unary_check(const struct hdm_kcall *c, uint64_t *items)
{
	int64_t op = c->args[0];

	if (c->num_tensors != 2 || op < HPU_UNARY_COPY || op > HPU_UNARY_ERF)
		return -1;
	if (op >= HPU_UNARY_GELU && !hdm_dtype_is_float(c->t[0].dtype))
		return -1;
	return hdm_keltwise_check(c, 1, items);
}

static int hdm_binary_check(const struct hdm_kcall *c, uint64_t *items)
{
	int64_t op = c->args[0], scalar_b = c->args[1];

	if (scalar_b != 0 && scalar_b != 1)
		return -1;
	if (c->num_tensors != 3 - scalar_b || op < HPU_BINARY_ADD || op > HPU_BINARY_GE)
		return -1;
	return hdm_keltwise_check(c, 2, items);
}

static int hdm_where_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (c->num_tensors != 4 || c->t[1].dtype != HPU_DTYPE_U8)
		return -1;
	return hdm_keltwise_check(c, 0, items);
}

static int hdm_fill_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (c->num_tensors != 1)
		return -1;
	return hdm_keltwise_check(c, 0, items);
}

static uint32_t hdm_keltwise_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1;
}

/* An item is an element: the engine's default work. */
#define HDM_KELTWISE_DEF(id, lo, hi)                                                     \
	{                                                                                \
		.name = #id, .min_tensors = lo, .max_tensors = hi,                       \
		.outputs = hdm_keltwise_outputs, .check = hdm_##id##_check,              \
		.run = hdm_keltwise_run,                                                 \
	}

const struct hdm_kernel_def hdm_kernel_unary = HDM_KELTWISE_DEF(unary, 2, 2);
const struct hdm_kernel_def hdm_kernel_binary = HDM_KELTWISE_DEF(binary, 2, 3);
const struct hdm_kernel_def hdm_kernel_where = HDM_KELTWISE_DEF(where, 4, 4);
const struct hdm_kernel_def hdm_kernel_fill = HDM_KELTWISE_DEF(fill, 1, 1);
