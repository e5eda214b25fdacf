// A user's plain Node ESM script (scripts/check-package.js runs it after installing the packed tarball).
import { createMasker } from 'tagmask';

const masker = await createMasker('tutorial', 'my-tokenizer');
const { mask } = masker.mask([100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601], { promptLength: 4 });
console.log(mask.join(''));
