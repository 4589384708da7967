/* A C11 program that generates text through the installed kvrt package: loads
 * a llama2.c model and tokenizer (argv[1], argv[2]), encodes a prompt, generates
 * greedily with the fast engine and streams the text to stdout. Built twice by
 * check_install.cmake: through find_package(kvrt) and through pkg-config. */
#include <kvrt/kvrt.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const kvrt_model* model;
  int64_t previous;
  size_t printed;
} Stream;

static int PrintToken(uint32_t token, const char* text, size_t text_length, void* user_data) {
  Stream* stream = (Stream*)user_data;
  const char* bytes = NULL;
  size_t length = 0;
  kvrt_error* error = kvrt_model_token_bytes(stream->model, stream->previous, token, &bytes, &length);
  stream->previous = token;
  if (error != NULL) {
    kvrt_error_free(error);
    return 1;
  }
  /* kvrt streams whole characters: the same bytes, perhaps a token later. */
  fwrite(text, 1, text_length, stdout);
  stream->printed += length;
  return 0;
}

static int Fail(kvrt_error* error) {
  fprintf(stderr, "error: %s (%d): %s\n", kvrt_error_name(error), kvrt_error_code(error), kvrt_error_message(error));
  kvrt_error_free(error);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL TOKENIZER\n", argv[0]);
    return 2;
  }
  kvrt_model* model = NULL;
  kvrt_error* error = kvrt_model_load(argv[1], &model);
  if (error != NULL) return Fail(error);
  if ((error = kvrt_model_load_tokenizer(model, argv[2])) != NULL) return Fail(error);
  const char* prompt = "Once upon a time";
  uint32_t* ids = NULL;
  size_t count = 0;
  if ((error = kvrt_model_encode_prompt(model, prompt, &ids, &count)) != NULL) return Fail(error);

  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = 16;
  Stream stream = {model, ids[count - 1], 0};
  fputs(prompt, stdout);
  kvrt_generation* generation = NULL;
  error = kvrt_generate(model, ids, count, &options, NULL, PrintToken, &stream, &generation);
  if (error != NULL) return Fail(error);
  printf("\n%zu tokens, stop: %s\n", kvrt_generation_count(generation), kvrt_generation_stop(generation));
  const int ok = kvrt_generation_count(generation) == 16 && strcmp(kvrt_generation_stop(generation), "token-limit") == 0;
  kvrt_generation_free(generation);
  kvrt_tokens_free(ids);
  kvrt_model_free(model);
  return ok ? 0 : 3;
}
