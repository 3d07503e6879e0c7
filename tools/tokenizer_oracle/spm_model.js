// Reads a SentencePiece `.model` file: a protobuf ModelProto, decoded here with a minimal
// wire-format reader (varints and length-delimited fields are all it uses) so the test tooling
// needs no protobuf package. Only the fields the tokenizer.json converters look at are kept.
"use strict";

// Wire types of the protobuf encoding.
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

// Calls onField(fieldNumber, wireType, value) for each field of the message in buf[begin, end):
// value is a BigInt for varints, a Buffer view for length-delimited fields, a float for fixed32
// (every fixed32 field of ModelProto is a float) and a Buffer view for fixed64.
function readMessage(buf, begin, end, onField) {
  let pos = begin;
  const varint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= end) throw new Error(`protobuf: varint runs past the end at byte ${pos}`);
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new Error(`protobuf: varint longer than 10 bytes at byte ${pos}`);
    }
  };
  while (pos < end) {
    const key = varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value;
    if (wire === VARINT) {
      value = varint();
    } else if (wire === LENGTH_DELIMITED) {
      const n = Number(varint());
      if (pos + n > end) throw new Error(`protobuf: field ${field} runs past the end`);
      value = buf.subarray(pos, pos + n);
      pos += n;
    } else if (wire === FIXED32) {
      if (pos + 4 > end) throw new Error(`protobuf: field ${field} runs past the end`);
      value = buf.readFloatLE(pos);
      pos += 4;
    } else if (wire === FIXED64) {
      if (pos + 8 > end) throw new Error(`protobuf: field ${field} runs past the end`);
      value = buf.subarray(pos, pos + 8);
      pos += 8;
    } else {
      throw new Error(`protobuf: unsupported wire type ${wire} (field ${field})`);
    }
    onField(field, wire, value);
  }
}

function forEachField(buf, onField) {
  readMessage(buf, 0, buf.length, onField);
}

// Varints of int32 fields are 64-bit two's complement when negative (pad_id = -1).
function int32(v) {
  return Number(BigInt.asIntN(64, v));
}

// SentencePiece.Type
const PIECE_TYPES = { 1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED",
                      6: "BYTE" };
// TrainerSpec.ModelType
const MODEL_TYPES = { 1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR" };

function parsePiece(buf) {
  const p = { piece: "", score: 0, type: 1 };  // proto2 defaults: score 0, type NORMAL
  forEachField(buf, (field, wire, v) => {
    if (field === 1 && wire === LENGTH_DELIMITED) p.piece = v.toString("utf8");
    else if (field === 2 && wire === FIXED32) p.score = v;
    else if (field === 3 && wire === VARINT) p.type = Number(v);
  });
  return p;
}

function parseTrainerSpec(buf) {
  // Defaults from sentencepiece_model.proto.
  const t = { model_type: 1, vocab_size: 8000, byte_fallback: false, unk_id: 0, bos_id: 1,
              eos_id: 2, pad_id: -1, unk_piece: "<unk>", bos_piece: "<s>", eos_piece: "</s>",
              pad_piece: "<pad>", treat_whitespace_as_suffix: false, split_digits: false };
  forEachField(buf, (field, wire, v) => {
    if (wire === VARINT) {
      switch (field) {
        case 3: t.model_type = Number(v); break;
        case 4: t.vocab_size = int32(v); break;
        case 24: t.treat_whitespace_as_suffix = v !== 0n; break;
        case 25: t.split_digits = v !== 0n; break;
        case 35: t.byte_fallback = v !== 0n; break;
        case 40: t.unk_id = int32(v); break;
        case 41: t.bos_id = int32(v); break;
        case 42: t.eos_id = int32(v); break;
        case 43: t.pad_id = int32(v); break;
        default: break;
      }
    } else if (wire === LENGTH_DELIMITED) {
      switch (field) {
        case 45: t.unk_piece = v.toString("utf8"); break;
        case 46: t.bos_piece = v.toString("utf8"); break;
        case 47: t.eos_piece = v.toString("utf8"); break;
        case 48: t.pad_piece = v.toString("utf8"); break;
        default: break;
      }
    }
  });
  return t;
}

function parseNormalizerSpec(buf) {
  const n = { name: "", precompiled_charsmap: Buffer.alloc(0), add_dummy_prefix: true,
              remove_extra_whitespaces: true, escape_whitespaces: true };
  forEachField(buf, (field, wire, v) => {
    if (field === 1 && wire === LENGTH_DELIMITED) n.name = v.toString("utf8");
    else if (field === 2 && wire === LENGTH_DELIMITED) n.precompiled_charsmap = Buffer.from(v);
    else if (field === 3 && wire === VARINT) n.add_dummy_prefix = v !== 0n;
    else if (field === 4 && wire === VARINT) n.remove_extra_whitespaces = v !== 0n;
    else if (field === 5 && wire === VARINT) n.escape_whitespaces = v !== 0n;
  });
  return n;
}

// Parses a ModelProto: {pieces: [{piece, score, type}], trainer_spec, normalizer_spec}.
function parseModel(buf) {
  const model = { pieces: [], trainer_spec: parseTrainerSpec(Buffer.alloc(0)),
                  normalizer_spec: parseNormalizerSpec(Buffer.alloc(0)) };
  forEachField(buf, (field, wire, v) => {
    if (wire !== LENGTH_DELIMITED) return;
    if (field === 1) model.pieces.push(parsePiece(v));
    else if (field === 2) model.trainer_spec = parseTrainerSpec(v);
    else if (field === 3) model.normalizer_spec = parseNormalizerSpec(v);
  });
  if (model.pieces.length === 0) throw new Error("SentencePiece model without pieces");
  return model;
}

module.exports = { parseModel, PIECE_TYPES, MODEL_TYPES };
