'''The offline training set of the `coding` task: short MBPP-style problems written for agentgrpo.

Each problem: the function name, a one-sentence statement, a reference solution, and four asserts. The
first assert is shown in the prompt (the visible example); the other three are hidden and scored.
Written for this package (not copied from MBPP); small list, string and arithmetic functions.
'''

PROBLEMS = [
    ("sum_of_squares", "Write a function sum_of_squares(n) that returns 1*1 + 2*2 + ... + n*n.",
     "def sum_of_squares(n):\n    return sum(i * i for i in range(1, n + 1))\n",
     ["assert sum_of_squares(3) == 14", "assert sum_of_squares(1) == 1", "assert sum_of_squares(0) == 0",
      "assert sum_of_squares(10) == 385"]),
    ("count_vowels", "Write a function count_vowels(s) that returns how many characters of s are vowels (aeiou, "
     "either case).",
     "def count_vowels(s):\n    return sum(1 for ch in s if ch.lower() in 'aeiou')\n",
     ["assert count_vowels('hello') == 2", "assert count_vowels('') == 0", "assert count_vowels('AEIOUx') == 5",
      "assert count_vowels('rhythm') == 0"]),
    ("reverse_words", "Write a function reverse_words(s) that returns the words of s in reverse order, joined by "
     "single spaces.",
     "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
     ["assert reverse_words('a b c') == 'c b a'", "assert reverse_words('hello') == 'hello'",
      "assert reverse_words('  one   two ') == 'two one'", "assert reverse_words('') == ''"]),
    ("is_palindrome", "Write a function is_palindrome(s) that returns True when s reads the same backwards, "
     "ignoring case.",
     "def is_palindrome(s):\n    t = s.lower()\n    return t == t[::-1]\n",
     ["assert is_palindrome('Level') == True", "assert is_palindrome('abc') == False",
      "assert is_palindrome('') == True", "assert is_palindrome('Abba') == True"]),
    ("second_largest", "Write a function second_largest(nums) that returns the second largest distinct value in "
     "the list nums (it has at least two distinct values).",
     "def second_largest(nums):\n    return sorted(set(nums))[-2]\n",
     ["assert second_largest([1, 3, 2]) == 2", "assert second_largest([5, 5, 4]) == 4",
      "assert second_largest([-1, -7, -3]) == -3", "assert second_largest([10, 20, 20, 30]) == 20"]),
    ("factorial", "Write a function factorial(n) that returns n! for n >= 0.",
     "def factorial(n):\n    out = 1\n    for i in range(2, n + 1):\n        out *= i\n    return out\n",
     ["assert factorial(5) == 120", "assert factorial(0) == 1", "assert factorial(1) == 1",
      "assert factorial(10) == 3628800"]),
    ("fibonacci", "Write a function fibonacci(n) that returns the n-th Fibonacci number, with fibonacci(0) == 0 "
     "and fibonacci(1) == 1.",
     "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
     ["assert fibonacci(7) == 13", "assert fibonacci(0) == 0", "assert fibonacci(1) == 1",
      "assert fibonacci(20) == 6765"]),
    ("count_words", "Write a function count_words(s) that returns the number of whitespace-separated words in s.",
     "def count_words(s):\n    return len(s.split())\n",
     ["assert count_words('the cat sat') == 3", "assert count_words('') == 0", "assert count_words('  a  ') == 1",
      "assert count_words('a\\tb\\nc d') == 4"]),
    ("max_of_three", "Write a function max_of_three(a, b, c) that returns the largest of three numbers.",
     "def max_of_three(a, b, c):\n    return max(a, b, c)\n",
     ["assert max_of_three(1, 5, 3) == 5", "assert max_of_three(-1, -5, -3) == -1",
      "assert max_of_three(7, 7, 2) == 7", "assert max_of_three(0, 0, 9) == 9"]),
    ("remove_duplicates", "Write a function remove_duplicates(items) that returns the list without repeated "
     "values, keeping the first occurrence of each, in order.",
     "def remove_duplicates(items):\n    seen, out = set(), []\n    for x in items:\n        if x not in seen:\n"
     "            seen.add(x)\n            out.append(x)\n    return out\n",
     ["assert remove_duplicates([1, 2, 1, 3]) == [1, 2, 3]", "assert remove_duplicates([]) == []",
      "assert remove_duplicates([4, 4, 4]) == [4]", "assert remove_duplicates(['b', 'a', 'b']) == ['b', 'a']"]),
    ("digit_sum", "Write a function digit_sum(n) that returns the sum of the decimal digits of the non-negative "
     "integer n.",
     "def digit_sum(n):\n    return sum(int(d) for d in str(n))\n",
     ["assert digit_sum(123) == 6", "assert digit_sum(0) == 0", "assert digit_sum(9999) == 36",
      "assert digit_sum(1000) == 1"]),
    ("is_prime", "Write a function is_prime(n) that returns True when the integer n is a prime number.",
     "def is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
     "        if n % i == 0:\n            return False\n        i += 1\n    return True\n",
     ["assert is_prime(7) == True", "assert is_prime(1) == False", "assert is_prime(21) == False",
      "assert is_prime(97) == True"]),
    ("gcd", "Write a function gcd(a, b) that returns the greatest common divisor of two positive integers.",
     "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
     ["assert gcd(12, 18) == 6", "assert gcd(7, 13) == 1", "assert gcd(100, 10) == 10", "assert gcd(9, 9) == 9"]),
    ("lcm", "Write a function lcm(a, b) that returns the least common multiple of two positive integers.",
     "def lcm(a, b):\n    x, y = a, b\n    while y:\n        x, y = y, x % y\n    return a * b // x\n",
     ["assert lcm(4, 6) == 12", "assert lcm(5, 7) == 35", "assert lcm(3, 9) == 9", "assert lcm(1, 1) == 1"]),
    ("capitalize_words", "Write a function capitalize_words(s) that returns s with the first letter of every "
     "space-separated word in upper case and the rest unchanged.",
     "def capitalize_words(s):\n    return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))\n",
     ["assert capitalize_words('hello world') == 'Hello World'", "assert capitalize_words('a') == 'A'",
      "assert capitalize_words('mIxed case') == 'MIxed Case'", "assert capitalize_words('') == ''"]),
    ("flatten", "Write a function flatten(lists) that returns one list with the elements of every inner list, "
     "in order.",
     "def flatten(lists):\n    return [x for inner in lists for x in inner]\n",
     ["assert flatten([[1, 2], [3]]) == [1, 2, 3]", "assert flatten([]) == []", "assert flatten([[], [5]]) == [5]",
      "assert flatten([['a'], ['b', 'c'], []]) == ['a', 'b', 'c']"]),
    ("count_occurrences", "Write a function count_occurrences(items, x) that returns how many times x appears in "
     "the list items.",
     "def count_occurrences(items, x):\n    return sum(1 for y in items if y == x)\n",
     ["assert count_occurrences([1, 2, 1], 1) == 2", "assert count_occurrences([], 3) == 0",
      "assert count_occurrences(['a', 'b'], 'c') == 0", "assert count_occurrences([0, 0, 0, 1], 0) == 3"]),
    ("celsius_to_fahrenheit", "Write a function celsius_to_fahrenheit(c) that converts degrees Celsius to "
     "Fahrenheit (c * 9 / 5 + 32).",
     "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32\n",
     ["assert celsius_to_fahrenheit(100) == 212", "assert celsius_to_fahrenheit(0) == 32",
      "assert celsius_to_fahrenheit(-40) == -40", "assert celsius_to_fahrenheit(37) == 98.6"]),
    ("even_numbers", "Write a function even_numbers(nums) that returns the even numbers of the list nums, in order.",
     "def even_numbers(nums):\n    return [x for x in nums if x % 2 == 0]\n",
     ["assert even_numbers([1, 2, 3, 4]) == [2, 4]", "assert even_numbers([]) == []",
      "assert even_numbers([1, 3]) == []", "assert even_numbers([0, -2, 5]) == [0, -2]"]),
    ("list_product", "Write a function list_product(nums) that returns the product of the numbers in nums (1 for "
     "an empty list).",
     "def list_product(nums):\n    out = 1\n    for x in nums:\n        out *= x\n    return out\n",
     ["assert list_product([2, 3, 4]) == 24", "assert list_product([]) == 1", "assert list_product([5]) == 5",
      "assert list_product([-1, 2, 0]) == 0"]),
    ("char_frequency", "Write a function char_frequency(s) that returns a dict mapping each character of s to the "
     "number of times it occurs.",
     "def char_frequency(s):\n    out = {}\n    for ch in s:\n        out[ch] = out.get(ch, 0) + 1\n    return out\n",
     ["assert char_frequency('aab') == {'a': 2, 'b': 1}", "assert char_frequency('') == {}",
      "assert char_frequency('xyz') == {'x': 1, 'y': 1, 'z': 1}", "assert char_frequency('  ') == {' ': 2}"]),
    ("binary_string", "Write a function binary_string(n) that returns the binary representation of the "
     "non-negative integer n without a prefix.",
     "def binary_string(n):\n    return bin(n)[2:]\n",
     ["assert binary_string(5) == '101'", "assert binary_string(0) == '0'", "assert binary_string(8) == '1000'",
      "assert binary_string(255) == '11111111'"]),
    ("running_sum", "Write a function running_sum(nums) that returns the list of prefix sums of nums.",
     "def running_sum(nums):\n    out, total = [], 0\n    for x in nums:\n        total += x\n"
     "        out.append(total)\n    return out\n",
     ["assert running_sum([1, 2, 3]) == [1, 3, 6]", "assert running_sum([]) == []",
      "assert running_sum([5]) == [5]", "assert running_sum([1, -1, 1]) == [1, 0, 1]"]),
    ("longest_word", "Write a function longest_word(s) that returns the longest space-separated word of s (the "
     "first one if several are equally long).",
     "def longest_word(s):\n    best = ''\n    for w in s.split():\n        if len(w) > len(best):\n"
     "            best = w\n    return best\n",
     ["assert longest_word('a bb ccc') == 'ccc'", "assert longest_word('one two six') == 'one'",
      "assert longest_word('hello') == 'hello'", "assert longest_word('ab abc abcd x') == 'abcd'"]),
    ("rotate_left", "Write a function rotate_left(items, k) that returns the list rotated left by k positions "
     "(k may exceed the length; an empty list stays empty).",
     "def rotate_left(items, k):\n    if not items:\n        return []\n    k %= len(items)\n"
     "    return items[k:] + items[:k]\n",
     ["assert rotate_left([1, 2, 3, 4], 1) == [2, 3, 4, 1]", "assert rotate_left([1, 2, 3], 3) == [1, 2, 3]",
      "assert rotate_left([], 2) == []", "assert rotate_left([1, 2, 3], 5) == [3, 1, 2]"]),
    ("is_sorted", "Write a function is_sorted(nums) that returns True when nums is in non-decreasing order.",
     "def is_sorted(nums):\n    return all(a <= b for a, b in zip(nums, nums[1:]))\n",
     ["assert is_sorted([1, 2, 2, 5]) == True", "assert is_sorted([3, 1]) == False", "assert is_sorted([]) == True",
      "assert is_sorted([1, 3, 2]) == False"]),
    ("square_evens_only", "Write a function square_evens_only(nums) that returns the squares of the even numbers "
     "of nums, in order.",
     "def square_evens_only(nums):\n    return [x * x for x in nums if x % 2 == 0]\n",
     ["assert square_evens_only([1, 2, 3, 4]) == [4, 16]", "assert square_evens_only([]) == []",
      "assert square_evens_only([3, 5]) == []", "assert square_evens_only([-2, 0]) == [4, 0]"]),
    ("common_elements", "Write a function common_elements(a, b) that returns the sorted list of distinct values "
     "present in both lists.",
     "def common_elements(a, b):\n    return sorted(set(a) & set(b))\n",
     ["assert common_elements([1, 2, 3], [2, 3, 4]) == [2, 3]", "assert common_elements([], [1]) == []",
      "assert common_elements([5, 5, 1], [5]) == [5]", "assert common_elements([3, 1], [1, 3]) == [1, 3]"]),
    ("count_uppercase", "Write a function count_uppercase(s) that returns the number of upper-case letters in s.",
     "def count_uppercase(s):\n    return sum(1 for ch in s if ch.isupper())\n",
     ["assert count_uppercase('Hello World') == 2", "assert count_uppercase('') == 0",
      "assert count_uppercase('ABC') == 3", "assert count_uppercase('abc123') == 0"]),
    ("power_of_two", "Write a function power_of_two(n) that returns True when the integer n is a power of two "
     "(1, 2, 4, 8, ...).",
     "def power_of_two(n):\n    return n > 0 and n & (n - 1) == 0\n",
     ["assert power_of_two(8) == True", "assert power_of_two(0) == False", "assert power_of_two(6) == False",
      "assert power_of_two(1) == True"]),
    ("chunk_list", "Write a function chunk_list(items, size) that splits items into consecutive lists of length "
     "size (the last may be shorter).",
     "def chunk_list(items, size):\n    return [items[i:i + size] for i in range(0, len(items), size)]\n",
     ["assert chunk_list([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]", "assert chunk_list([], 3) == []",
      "assert chunk_list([1, 2], 5) == [[1, 2]]", "assert chunk_list([1, 2, 3], 1) == [[1], [2], [3]]"]),
    ("triangle_area", "Write a function triangle_area(base, height) that returns the area of a triangle.",
     "def triangle_area(base, height):\n    return base * height / 2\n",
     ["assert triangle_area(4, 3) == 6", "assert triangle_area(0, 5) == 0", "assert triangle_area(5, 5) == 12.5",
      "assert triangle_area(1, 1) == 0.5"]),
    ("replace_spaces", "Write a function replace_spaces(s) that returns s with every space replaced by an "
     "underscore.",
     "def replace_spaces(s):\n    return s.replace(' ', '_')\n",
     ["assert replace_spaces('a b c') == 'a_b_c'", "assert replace_spaces('') == ''",
      "assert replace_spaces('nospace') == 'nospace'", "assert replace_spaces('  ') == '__'"]),
    ("min_index", "Write a function min_index(nums) that returns the index of the smallest value of the non-empty "
     "list nums (the first one on ties).",
     "def min_index(nums):\n    return nums.index(min(nums))\n",
     ["assert min_index([3, 1, 2]) == 1", "assert min_index([5]) == 0", "assert min_index([2, 0, 0]) == 1",
      "assert min_index([-1, 4, -3, 9]) == 2"]),
    ("average", "Write a function average(nums) that returns the arithmetic mean of the non-empty list nums.",
     "def average(nums):\n    return sum(nums) / len(nums)\n",
     ["assert average([1, 2, 3]) == 2", "assert average([5]) == 5", "assert average([1, 2]) == 1.5",
      "assert average([-4, 4, 3, 1]) == 1"]),
    ("starts_with_vowel", "Write a function starts_with_vowel(words) that returns the words of the list that start "
     "with a vowel (aeiou, either case), in order.",
     "def starts_with_vowel(words):\n    return [w for w in words if w[:1].lower() in ('a', 'e', 'i', 'o', 'u')]\n",
     ["assert starts_with_vowel(['apple', 'pear']) == ['apple']", "assert starts_with_vowel([]) == []",
      "assert starts_with_vowel(['Egg', 'ox', 'yak']) == ['Egg', 'ox']", "assert starts_with_vowel(['', 'b']) == []"]),
    ("merge_sorted", "Write a function merge_sorted(a, b) that merges two sorted lists into one sorted list.",
     "def merge_sorted(a, b):\n    i = j = 0\n    out = []\n    while i < len(a) and j < len(b):\n"
     "        if a[i] <= b[j]:\n            out.append(a[i])\n            i += 1\n        else:\n"
     "            out.append(b[j])\n            j += 1\n    return out + a[i:] + b[j:]\n",
     ["assert merge_sorted([1, 3], [2, 4]) == [1, 2, 3, 4]", "assert merge_sorted([], [1]) == [1]",
      "assert merge_sorted([1, 1], [1]) == [1, 1, 1]", "assert merge_sorted([5, 6], [1, 2]) == [1, 2, 5, 6]"]),
    ("number_of_divisors", "Write a function number_of_divisors(n) that returns how many positive integers divide "
     "the positive integer n.",
     "def number_of_divisors(n):\n    return sum(1 for d in range(1, n + 1) if n % d == 0)\n",
     ["assert number_of_divisors(6) == 4", "assert number_of_divisors(1) == 1", "assert number_of_divisors(7) == 2",
      "assert number_of_divisors(36) == 9"]),
    ("string_to_ints", "Write a function string_to_ints(s) that returns the list of integers written in s, "
     "separated by commas.",
     "def string_to_ints(s):\n    return [int(p) for p in s.split(',') if p.strip()]\n",
     ["assert string_to_ints('1,2,3') == [1, 2, 3]", "assert string_to_ints('') == []",
      "assert string_to_ints('10, -4') == [10, -4]", "assert string_to_ints('7') == [7]"]),
    ("swap_case", "Write a function swap_case(s) that returns s with upper-case letters made lower case and vice "
     "versa.",
     "def swap_case(s):\n    return s.swapcase()\n",
     ["assert swap_case('aBc') == 'AbC'", "assert swap_case('') == ''", "assert swap_case('123') == '123'",
      "assert swap_case('Hello World') == 'hELLO wORLD'"]),
    ("pair_sums", "Write a function pair_sums(a, b) that returns the element-wise sums of two lists of equal "
     "length.",
     "def pair_sums(a, b):\n    return [x + y for x, y in zip(a, b)]\n",
     ["assert pair_sums([1, 2], [3, 4]) == [4, 6]", "assert pair_sums([], []) == []",
      "assert pair_sums([0], [-5]) == [-5]", "assert pair_sums([1, 1, 1], [1, 2, 3]) == [2, 3, 4]"]),
    ("nth_triangular", "Write a function nth_triangular(n) that returns the n-th triangular number "
     "1 + 2 + ... + n.",
     "def nth_triangular(n):\n    return n * (n + 1) // 2\n",
     ["assert nth_triangular(4) == 10", "assert nth_triangular(0) == 0", "assert nth_triangular(1) == 1",
      "assert nth_triangular(100) == 5050"]),
    ("last_digit", "Write a function last_digit(n) that returns the last decimal digit of the integer n (for a "
     "negative n, of its absolute value).",
     "def last_digit(n):\n    return abs(n) % 10\n",
     ["assert last_digit(123) == 3", "assert last_digit(0) == 0", "assert last_digit(-47) == 7",
      "assert last_digit(10) == 0"]),
    ("dict_invert", "Write a function dict_invert(d) that returns a new dict mapping each value of d to its key "
     "(the values are distinct).",
     "def dict_invert(d):\n    return {v: k for k, v in d.items()}\n",
     ["assert dict_invert({'a': 1}) == {1: 'a'}", "assert dict_invert({}) == {}",
      "assert dict_invert({1: 2, 3: 4}) == {2: 1, 4: 3}", "assert dict_invert({'x': 'y', 'y': 'z'}) == "
      "{'y': 'x', 'z': 'y'}"]),
    ("max_difference", "Write a function max_difference(nums) that returns the largest value minus the smallest "
     "value of the non-empty list nums.",
     "def max_difference(nums):\n    return max(nums) - min(nums)\n",
     ["assert max_difference([1, 5, 3]) == 4", "assert max_difference([7]) == 0",
      "assert max_difference([-2, 2]) == 4", "assert max_difference([3, 3, 3]) == 0"]),
    ("filter_long_words", "Write a function filter_long_words(words, n) that returns the words longer than n "
     "characters, in order.",
     "def filter_long_words(words, n):\n    return [w for w in words if len(w) > n]\n",
     ["assert filter_long_words(['a', 'abc', 'ab'], 1) == ['abc', 'ab']", "assert filter_long_words([], 2) == []",
      "assert filter_long_words(['xy'], 2) == []", "assert filter_long_words(['hello', 'hi'], 0) == ['hello', 'hi']"]),
    ("count_positive", "Write a function count_positive(nums) that returns how many numbers in nums are greater "
     "than zero.",
     "def count_positive(nums):\n    return sum(1 for x in nums if x > 0)\n",
     ["assert count_positive([1, -2, 3]) == 2", "assert count_positive([]) == 0", "assert count_positive([0, 0]) == 0",
      "assert count_positive([5, 6, 7, -1]) == 3"]),
    ("first_repeated_char", "Write a function first_repeated_char(s) that returns the first character of s that "
     "occurs earlier in s too, or None when no character repeats.",
     "def first_repeated_char(s):\n    seen = set()\n    for ch in s:\n        if ch in seen:\n            return ch\n"
     "        seen.add(ch)\n    return None\n",
     ["assert first_repeated_char('abca') == 'a'", "assert first_repeated_char('abc') == None",
      "assert first_repeated_char('abba') == 'b'", "assert first_repeated_char('') == None"]),
    ("sum_digits_string", "Write a function sum_digits_string(s) that returns the sum of the digit characters in "
     "the string s.",
     "def sum_digits_string(s):\n    return sum(int(ch) for ch in s if ch.isdigit())\n",
     ["assert sum_digits_string('a1b2') == 3", "assert sum_digits_string('') == 0",
      "assert sum_digits_string('abc') == 0", "assert sum_digits_string('999') == 27"]),
    ("clamp", "Write a function clamp(x, lo, hi) that returns x limited to the range [lo, hi].",
     "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
     ["assert clamp(5, 0, 10) == 5", "assert clamp(-3, 0, 10) == 0", "assert clamp(11, 0, 10) == 10",
      "assert clamp(2, 2, 2) == 2"]),
]
