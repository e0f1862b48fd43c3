/* GTCO runtime C API: load an exported model (.gtco), describe its inputs and outputs, run it.
 * Links nothing of the farm (no LLVM, gRPC, protobuf or SQLite). One loaded model may be run
 * from several threads at once. Every function returns GTCO_OK or an error code; the message of
 * the calling thread's last error is gtco_last_error(). */
#ifndef GTCO_RUNTIME_H_
#define GTCO_RUNTIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GTCO_OK = 0,
  GTCO_INVALID_ARGUMENT = 1,    /* bad input count, dtype, shape or index; not an artifact */
  GTCO_NOT_FOUND = 2,           /* no such file */
  GTCO_FAILED_PRECONDITION = 3, /* the host lacks a CPU feature the artifact needs */
  GTCO_DATA_LOSS = 4,           /* truncated or corrupt artifact */
  GTCO_INTERNAL = 5
} gtco_status;

typedef enum {
  GTCO_F32 = 0, GTCO_BF16 = 1, GTCO_F16 = 2, GTCO_I8 = 3, GTCO_U8 = 4, GTCO_I32 = 5,
  GTCO_I64 = 6, GTCO_BOOL = 7
} gtco_dtype;

typedef struct gtco_model gtco_model;

/* A tensor's description; `name` and `shape` stay valid while the model is loaded. */
typedef struct {
  const char* name;
  gtco_dtype dtype;
  int rank;
  const int64_t* shape;
} gtco_tensor_info;

gtco_status gtco_model_load(const char* path, gtco_model** model);
void gtco_model_free(gtco_model* model);
int gtco_model_num_inputs(const gtco_model* model);
int gtco_model_num_outputs(const gtco_model* model);
gtco_status gtco_model_input(const gtco_model* model, int index, gtco_tensor_info* info);
gtco_status gtco_model_output(const gtco_model* model, int index, gtco_tensor_info* info);
/* Runs the model: inputs[i] holds input i (its described dtype and shape, row-major),
 * outputs[i] has room for output i. */
gtco_status gtco_model_run(const gtco_model* model, const void* const* inputs,
                           void* const* outputs);
/* Threads the kernels' parallel loops use in this process (<= 0: all cores). */
void gtco_set_threads(int threads);
/* The calling thread's last error message ("" after success). */
const char* gtco_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GTCO_RUNTIME_H_ */
